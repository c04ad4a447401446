package eval

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// LongMemEval set constants.
const (
	// LMETenant is the tenant LongMemEval is published under; every question is a user of it.
	LMETenant = "lme"
	// LMELimit is the number of entries asked for per question.
	LMELimit = 50
)

// LongMemEval metric names.
const (
	SAll5  = "S-R_all@5"
	SAll10 = "S-R_all@10"
	SAny5  = "S-R_any@5"
	TAny5  = "T-R_any@5"
	TAny10 = "T-R_any@10"
)

// LMEItem is one LongMemEval question with its haystack. The haystack sessions stay undecoded
// until PrepareLongMemEval needs them.
type LMEItem struct {
	QuestionID         string          `json:"question_id"`
	QuestionType       string          `json:"question_type"`
	Question           string          `json:"question"`
	QuestionDate       string          `json:"question_date"`
	AnswerSessionIDs   flexStrings     `json:"answer_session_ids"`
	HaystackDates      []string        `json:"haystack_dates"`
	HaystackSessionIDs flexStrings     `json:"haystack_session_ids"`
	HaystackSessions   json.RawMessage `json:"haystack_sessions"`
}

// LMETurn is one turn of a haystack session.
type LMETurn struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	HasAnswer bool   `json:"has_answer"`
}

// Abstention reports whether the question is an abstention question (id ending in "_abs"),
// which has no evidence and is left out of recall.
func (it LMEItem) Abstention() bool { return strings.HasSuffix(it.QuestionID, "_abs") }

// flexStrings decodes a JSON list whose items are strings or numbers.
type flexStrings []string

func (f *flexStrings) UnmarshalJSON(b []byte) error {
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	out := make([]string, 0, len(items))
	for _, raw := range items {
		var fs flexString
		if err := fs.UnmarshalJSON(raw); err != nil {
			return err
		}
		out = append(out, string(fs))
	}
	*f = out
	return nil
}

// flexString decodes a JSON string or number into its text (null gives "").
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*f = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("want a string or a number, got %.40s", b)
		}
		*f = flexString(n.String())
	}
	return nil
}

// ParseLMETime parses a LongMemEval date ("2023/05/30 (Tue) 23:42") as UTC.
func ParseLMETime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006/01/02 (Mon) 15:04", "2006/01/02 15:04", "2006/01/02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("eval: unrecognised LongMemEval date %q", s)
}

// openMaybeGzip opens path, decompressing it when it starts with the gzip magic bytes.
func openMaybeGzip(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return gz, func() error { return errors.Join(gz.Close(), f.Close()) }, nil
	}
	return br, f.Close, nil
}

// ReadLongMemEval reads a LongMemEval file: a JSON list of questions, gzipped or not. It fails on
// a file that is not such a list.
func ReadLongMemEval(path string) ([]LMEItem, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%s: expected a JSON list of questions", path)
	}
	var items []LMEItem
	for dec.More() {
		var it LMEItem
		if err := dec.Decode(&it); err != nil {
			return nil, fmt.Errorf("%s: question %d: %w", path, len(items)+1, err)
		}
		if it.QuestionID == "" {
			return nil, fmt.Errorf("%s: question %d has no question_id", path, len(items)+1)
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s: after question %d: %w", path, len(items), err)
	}
	return items, nil
}

// lmeSampleStream separates the sampler's random stream from other uses of the seed.
const lmeSampleStream = 0x6167656e746d656d // "agentmem"

// SampleLongMemEval returns n of the questions that are not abstention questions, in file order,
// stratified by question type: each type gets its share of n (largest remainder), drawn after a
// shuffle seeded with seed. n <= 0, or n at least the number of questions, returns them all.
func SampleLongMemEval(items []LMEItem, n int, seed uint64) []LMEItem {
	byType := map[string][]int{}
	total := 0
	for i, it := range items {
		if !it.Abstention() {
			byType[it.QuestionType] = append(byType[it.QuestionType], i)
			total++
		}
	}
	var picked []int
	if n <= 0 || n >= total {
		for _, idx := range byType {
			picked = append(picked, idx...)
		}
	} else {
		types := sortedKeys(byType)
		quota := make(map[string]int, len(types))
		type rest struct {
			typ  string
			frac float64
		}
		var rests []rest
		left := n
		for _, t := range types {
			exact := float64(n) * float64(len(byType[t])) / float64(total)
			quota[t] = int(exact)
			left -= quota[t]
			rests = append(rests, rest{t, exact - float64(quota[t])})
		}
		sort.SliceStable(rests, func(i, j int) bool { return rests[i].frac > rests[j].frac })
		for i := 0; i < left; i++ {
			quota[rests[i].typ]++
		}
		r := rand.New(rand.NewPCG(seed, lmeSampleStream))
		for _, t := range types {
			idx := slices.Clone(byType[t])
			r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			picked = append(picked, idx[:quota[t]]...)
		}
	}
	slices.Sort(picked)
	out := make([]LMEItem, 0, len(picked))
	for _, i := range picked {
		out = append(out, items[i])
	}
	return out
}

// LMEQuestion is one question prepared for publishing and asking.
type LMEQuestion struct {
	Item     LMEItem
	User     string
	At       time.Time
	AtRaised bool // a haystack session is dated after the question: At is just after its newest turn
	Sessions []Session
	// GoldSessions are the (token) ids of the answer sessions that are in the haystack.
	GoldSessions []string
	// GoldTurns are the ids of the turns flagged has_answer, sorted.
	GoldTurns []string
	// Repeats counts haystack sessions skipped because their id appeared before in the haystack.
	Repeats int
	// Blank counts turns without content, which are not published (the contract rejects them).
	Blank int
}

// TurnID is the CloudEvent id of turn index of haystack session hs ("<user>:<hs>:<index>").
func (q *LMEQuestion) TurnID(hs string, index int) string {
	return q.User + ":" + hs + ":" + strconv.Itoa(index)
}

// SessionOf returns the haystack session token of one of the question's turn ids, or "".
func (q *LMEQuestion) SessionOf(id string) string {
	rest, ok := strings.CutPrefix(id, q.User+":")
	if !ok {
		return ""
	}
	hs, index, ok := strings.Cut(rest, ":")
	if !ok || hs == "" || index == "" || strings.Contains(index, ":") {
		return ""
	}
	for _, c := range index {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return hs
}

// IsTurn reports whether id is one of the question's turn ids.
func (q *LMEQuestion) IsTurn(id string) bool { return q.SessionOf(id) != "" }

// PrepareLongMemEval turns a question into its user's sessions and its gold: the user is the
// question id as a token; every haystack session (a repeated id once) becomes session
// "<user>_<session id>" of that user, each turn a turn with id "<user>:<session id>:<index>" at
// the haystack date plus index seconds (a turn with blank content is left out), and a session
// end. At is the question date, raised to
// one minute after the newest haystack turn when a haystack session is dated after the question.
func PrepareLongMemEval(it LMEItem) (*LMEQuestion, error) {
	q := &LMEQuestion{Item: it, User: Token(it.QuestionID)}
	at, err := ParseLMETime(it.QuestionDate)
	if err != nil {
		return nil, err
	}
	q.At = at
	var sessions [][]LMETurn
	if err := json.Unmarshal(it.HaystackSessions, &sessions); err != nil {
		return nil, fmt.Errorf("haystack_sessions: %w", err)
	}
	if len(sessions) != len(it.HaystackSessionIDs) || len(sessions) != len(it.HaystackDates) {
		return nil, fmt.Errorf("%d haystack sessions, %d ids, %d dates", len(sessions), len(it.HaystackSessionIDs), len(it.HaystackDates))
	}
	seen := map[string]bool{}
	var newest time.Time
	for i, turns := range sessions {
		hs := Token(it.HaystackSessionIDs[i])
		if seen[hs] {
			q.Repeats++
			continue
		}
		seen[hs] = true
		date, err := ParseLMETime(it.HaystackDates[i])
		if err != nil {
			return nil, err
		}
		s := Session{Tenant: LMETenant, ID: Token(q.User + "_" + hs), User: q.User}
		for ti, t := range turns {
			id := q.TurnID(hs, ti)
			if t.HasAnswer {
				q.GoldTurns = append(q.GoldTurns, id)
			}
			if strings.TrimSpace(t.Content) == "" {
				q.Blank++ // the contract rejects a blank turn: it is not published
				continue
			}
			role := t.Role
			if role != events.RoleUser && role != events.RoleAssistant && role != events.RoleSystem && role != events.RoleTool {
				role = events.RoleUser
			}
			when := date.Add(time.Duration(ti) * time.Second)
			if when.After(newest) {
				newest = when
			}
			s.Turns = append(s.Turns, client.Turn{ID: id, Session: s.ID, User: q.User, Role: role, Content: t.Content, Time: when})
		}
		q.Sessions = append(q.Sessions, s)
	}
	for _, a := range it.AnswerSessionIDs {
		if hs := Token(a); seen[hs] && !slices.Contains(q.GoldSessions, hs) {
			q.GoldSessions = append(q.GoldSessions, hs)
		}
	}
	sort.Strings(q.GoldTurns)
	q.Item.HaystackSessions = nil // decoded into q.Sessions
	if !newest.Before(q.At) {
		q.At = newest.Add(time.Minute)
		q.AtRaised = true
	}
	return q, nil
}

// Score computes the question's metrics from the ranked distinct turn ids: S-R_all@5/@10 and
// S-R_any@5 when it has gold sessions, T-R_any@5/@10 when it has turns flagged has_answer.
func (q *LMEQuestion) Score(ranked []string) map[string]float64 {
	m := map[string]float64{}
	if len(q.GoldSessions) > 0 {
		m[SAll5], m[SAny5] = SessionRecallAt(ranked, q.SessionOf, q.GoldSessions, 5)
		m[SAll10], _ = SessionRecallAt(ranked, q.SessionOf, q.GoldSessions, 10)
	}
	if len(q.GoldTurns) > 0 {
		m[TAny5] = HitAt(ranked, q.GoldTurns, 5)
		m[TAny10] = HitAt(ranked, q.GoldTurns, 10)
	}
	return m
}

// Query is the retrieve request of the question: its text over the user's archive and
// long-term memory, at At.
func (q *LMEQuestion) Query() Query {
	limit, at := LMELimit, q.At
	return Query{
		ID: q.Item.QuestionID, Group: q.Item.QuestionType, Tenant: LMETenant,
		Request: events.RetrieveRequest{Query: q.Item.Question, User: q.User, Limit: &limit,
			Sources: []string{events.SourceArchive, events.SourceLong}, At: &at},
		IsTurn: q.IsTurn, Score: q.Score,
		Detail: map[string]any{"question_type": q.Item.QuestionType, "gold_sessions": q.GoldSessions,
			"gold_turns": q.GoldTurns, "at_raised": q.AtRaised},
		Answers: q.answers(),
	}
}

// answers are the question's answer sessions, then its answer turns.
func (q *LMEQuestion) answers() []Answer {
	var out []Answer
	for _, s := range q.GoldSessions {
		out = append(out, sessionAnswer(s, q.SessionOf))
	}
	for _, t := range q.GoldTurns {
		out = append(out, turnAnswer("turn", t))
	}
	return out
}

// lmeBaseline is BM25 over every haystack turn in the units memeval reports
// (shared/data/baselines.md, first section).
var lmeBaseline = Baseline{Label: "BM25 (baselines.md)", Values: map[string]float64{
	SAll5: 0.714, SAll10: 0.816, TAny5: 0.755, TAny10: 0.816,
}}

// LongMemEvalSet reads path, samples n questions (all with n <= 0; see SampleLongMemEval) and
// prepares them. notes says what was adjusted (raised at, repeated sessions).
func LongMemEvalSet(path string, n int, seed uint64) (set *Set, notes []string, err error) {
	items, err := ReadLongMemEval(path)
	if err != nil {
		return nil, nil, err
	}
	picked := SampleLongMemEval(items, n, seed)
	if len(picked) == 0 {
		return nil, nil, fmt.Errorf("%s: no question to ask (abstention questions are left out)", path)
	}
	set = &Set{
		Name: "lme", Title: "LongMemEval_S dev (" + path + ")", GroupLabel: "QUESTION TYPE",
		Columns: []Column{
			{Header: "N", Metric: SAll5, Count: true}, {Header: SAll5, Metric: SAll5}, {Header: SAll10, Metric: SAll10},
			{Header: SAny5, Metric: SAny5},
			{Header: "N(turn)", Metric: TAny5, Count: true}, {Header: TAny5, Metric: TAny5}, {Header: TAny10, Metric: TAny10},
		},
		Baselines: []Baseline{lmeBaseline},
	}
	raised, repeats, blank, turns := 0, 0, 0, 0
	for _, it := range picked {
		q, err := PrepareLongMemEval(it)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: question %s: %w", path, it.QuestionID, err)
		}
		set.Sessions = append(set.Sessions, q.Sessions...)
		set.Queries = append(set.Queries, q.Query())
		for _, s := range q.Sessions {
			turns += len(s.Turns)
		}
		repeats += q.Repeats
		blank += q.Blank
		if q.AtRaised {
			raised++
		}
	}
	notes = append(notes,
		fmt.Sprintf("%d of %d questions (abstention questions left out; n=%d, seed %d), %d sessions, %d turns",
			len(picked), len(items), n, seed, len(set.Sessions), turns),
		fmt.Sprintf("%d question(s) have a haystack session dated after the question: at raised to one minute after its newest turn", raised))
	if repeats > 0 {
		notes = append(notes, fmt.Sprintf("%d repeated haystack session id(s) published once", repeats))
	}
	if blank > 0 {
		notes = append(notes, fmt.Sprintf("%d turn(s) with blank content not published (the contract rejects them)", blank))
	}
	return set, notes, nil
}
