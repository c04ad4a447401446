// Package fact turns conversation text into durable facts about the user: preferences,
// identity, project settings and decisions.
//
// Two extractors produce the same [Candidate]s. With an LLM configured, [Prompt] builds the
// extraction request and [Parse] reads the answer strictly (a malformed answer gives an error
// wrapping [ErrMalformed] and no facts at all). Without one, [Rules] stands in: English and
// Chinese patterns over the user's own turns, deterministic and offline, high in precision and
// deliberately low in recall.
//
// [Normalize], [ID] and [KeyID] are the long-term store's deduplication and supersession
// bookkeeping: a fact's id is derived from its normalised content, and a key slot such as
// "user.city" lets a newer fact supersede an older one.
//
// What Rules will not remember: contact details and secrets (e-mail addresses, phone numbers,
// postal addresses, passwords, PINs, card, bank, passport or national id numbers, API keys and
// tokens). "My X is Y" is read for a short list of identity slots (birthday, hometown,
// occupation, native language, time zone) and, as an everyday fact, when Y holds a number
// ("my highest score is 124 points") and X is not an account, contact or booking detail. A
// clause that contains an e-mail address, a street address, a run of seven or more digits
// (dates excepted), a word such as "password" or 密码, or something shaped like a key yields
// nothing. The LLM prompt asks for the same.
package fact

import (
	"slices"
	"time"
)

// Turn is one conversation turn given to an extractor.
type Turn struct {
	ID      string
	Role    string // "user", "assistant", "system" or "tool"
	Content string
	Time    time.Time
}

// Candidate is a fact an extractor found, before the long-term store deduplicates it.
type Candidate struct {
	// Content is a self-contained statement about the user in the conversation's language:
	// "The user's favourite programming language is Go", "用户最喜欢的编程语言是 Go".
	Content string
	// Category is one of the Category constants.
	Category string
	// Key is an optional stable slot ("user.city", "user.name", "user.favorite_language",
	// "user.employer", "project.language"); a newer fact with the same key supersedes an older
	// one. Empty when there is none.
	Key string
	// Confidence is in [0, 1].
	Confidence float64
	// Provenance lists the ids of the turns that stated the fact, in conversation order.
	Provenance []string
	// Time is the time of the earliest of those turns.
	Time time.Time
}

// The categories of a fact.
const (
	CategoryPreference = "preference"
	CategoryIdentity   = "identity"
	CategoryProject    = "project"
	CategoryDecision   = "decision"
	CategoryOther      = "other"
)

// ValidCategory reports whether c is one of the Category constants (exactly, in lower case).
func ValidCategory(c string) bool {
	switch c {
	case CategoryPreference, CategoryIdentity, CategoryProject, CategoryDecision, CategoryOther:
		return true
	}
	return false
}

// merger folds candidates with the same normalised content into one: provenance is the
// union in conversation order, time the earliest, confidence the highest; the first
// candidate's category and key are kept.
type merger struct {
	order map[string]int // turn id -> position in the conversation
	times map[string]time.Time
	byKey map[string]int // normalised content -> index in out
	out   []Candidate
}

func newMerger(turns []Turn) *merger {
	m := &merger{
		order: make(map[string]int, len(turns)),
		times: make(map[string]time.Time, len(turns)),
		byKey: make(map[string]int),
	}
	for i, t := range turns {
		if _, ok := m.order[t.ID]; !ok {
			m.order[t.ID] = i
			m.times[t.ID] = t.Time
		}
	}
	return m
}

func (m *merger) add(c Candidate) {
	norm := Normalize(c.Content)
	if i, ok := m.byKey[norm]; ok {
		prev := &m.out[i]
		prev.Provenance = append(prev.Provenance, c.Provenance...)
		prev.Confidence = max(prev.Confidence, c.Confidence)
		if prev.Key == "" {
			prev.Key = c.Key
		}
		return
	}
	m.byKey[norm] = len(m.out)
	c.Provenance = slices.Clone(c.Provenance)
	m.out = append(m.out, c)
}

// result sorts and deduplicates every candidate's provenance and sets its time.
func (m *merger) result() []Candidate {
	for i := range m.out {
		c := &m.out[i]
		slices.SortStableFunc(c.Provenance, func(a, b string) int { return m.order[a] - m.order[b] })
		c.Provenance = slices.Compact(c.Provenance)
		c.Time = time.Time{}
		for _, id := range c.Provenance {
			t := m.times[id]
			if t.IsZero() {
				continue
			}
			if c.Time.IsZero() || t.Before(c.Time) {
				c.Time = t
			}
		}
	}
	return m.out
}
