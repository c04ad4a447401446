package eval

import (
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// Session is one conversation of a data set as it is published: its turns in order (with their
// ids and original times), then a session end.
type Session struct {
	Tenant string
	ID     string
	User   string
	Turns  []client.Turn
}

// Query is one question of a data set: the retrieve request, how to read the reply and how to
// score it.
type Query struct {
	// ID names the question (question id, dialogue id).
	ID string
	// Group is the row the question counts in besides "overall" (question type, user).
	Group   string
	Tenant  string
	Request events.RetrieveRequest
	// IsTurn accepts the turn ids the metrics are computed on.
	IsTurn func(id string) bool
	// Score computes the question's metrics from the ranked distinct turn ids; a metric that does
	// not apply to the question (no gold for it) is left out.
	Score func(ranked []string) map[string]float64
	// Detail is written to the per-question output next to the ranking (gold ids, at, …).
	Detail map[string]any
	// Answers are what the question's ranking should hold near its top, for the miss report
	// (WriteMisses).
	Answers []Answer
}

// Column is one column of a set's table: the mean of Metric, or with Count the number of
// questions Metric applies to.
type Column struct {
	Header string
	Metric string
	Count  bool
}

// Baseline is a reference row printed under a set's table.
type Baseline struct {
	Label  string
	Values map[string]float64
}

// Set is a prepared data set: what to publish, what to ask and how to print the results.
type Set struct {
	Name       string
	Title      string
	GroupLabel string
	Columns    []Column
	Baselines  []Baseline
	Sessions   []Session
	Queries    []Query
}

// Overall is the group every question counts in.
const Overall = "overall"
