package summarize

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/pkg/memory"
)

// longMemEvalPath is the LongMemEval-S dev split shared with the project (MIT licensed): a
// gzipped JSON list of questions, each with the chat sessions of its haystack.
const longMemEvalPath = "/work/shared/data/longmemeval/longmemeval_s_dev.json.gz"

// lmeSession is one distinct haystack session.
type lmeSession struct {
	id    string
	turns []lmeTurn
}

type lmeTurn struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	HasAnswer bool   `json:"has_answer"`
}

// loadLongMemEval returns the distinct sessions of the file, in first-seen order.
func loadLongMemEval(path string) ([]lmeSession, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	dec := json.NewDecoder(zr)
	if _, err := dec.Token(); err != nil { // [
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	seen := make(map[string]bool)
	var out []lmeSession
	for dec.More() {
		var item struct {
			IDs      []string    `json:"haystack_session_ids"`
			Sessions [][]lmeTurn `json:"haystack_sessions"`
		}
		if err := dec.Decode(&item); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		for i, turns := range item.Sessions {
			id := fmt.Sprint(i)
			if i < len(item.IDs) {
				id = item.IDs[i]
			}
			if !seen[id] {
				seen[id] = true
				out = append(out, lmeSession{id: id, turns: turns})
			}
		}
	}
	return out, nil
}

func turnTokens(turns []lmeTurn) int {
	n := 0
	for _, t := range turns {
		n += memory.Estimate(t.Content)
	}
	return n
}

// entriesOf returns turns as entries of session id.
func entriesOf(id string, turns []lmeTurn) []memory.Entry {
	entries := make([]memory.Entry, len(turns))
	for i, tr := range turns {
		entries[i] = memory.Entry{ID: fmt.Sprintf("%s-%d", id, i), Type: memory.TypeForRole(tr.Role),
			Role: tr.Role, Content: tr.Content, Tokens: memory.Estimate(tr.Content)}
	}
	return entries
}

// measureEvidence logs how many evidence turns (has_answer) among the compressed turns keep at
// least one of their sentences in the extractive summary, at the 2,000-token cap and at a
// quarter of the compressed tokens.
func measureEvidence(t *testing.T, s *Summarizer, sessions []lmeSession, recent int) {
	for _, quarter := range []bool{false, true} {
		var evidence, kept, sumBefore, sumAfter int
		byRole := map[string][2]int{} // role → kept, evidence
		for _, sess := range sessions {
			old := sess.turns[:len(sess.turns)-recent]
			if !slices.ContainsFunc(old, func(tr lmeTurn) bool { return tr.HasAnswer }) {
				continue
			}
			before := turnTokens(old)
			limit := 2000
			if quarter {
				limit = min(limit, max(before/4, 50))
			}
			res, err := s.Summarize(context.Background(), entriesOf(sess.id, old), limit)
			if err != nil {
				t.Fatal(err)
			}
			sumBefore += before
			sumAfter += memory.Estimate(res.Content)
			for _, tr := range old {
				if !tr.HasAnswer {
					continue
				}
				evidence++
				r := byRole[tr.Role]
				r[1]++
				for _, sent := range splitSentences(tr.Content, nil) {
					if len(sent) >= 20 && strings.Contains(res.Content, sent) {
						kept++
						r[0]++
						break
					}
				}
				byRole[tr.Role] = r
			}
		}
		name := "cap 2000"
		if quarter {
			name = "cap a quarter of the input"
		}
		if evidence == 0 {
			t.Logf("%s: no evidence turn among the compressed turns", name)
			continue
		}
		t.Logf("%s: %d of %d evidence turns (%.1f%%) keep a sentence (user %d/%d, assistant %d/%d); %d → %d tokens over their sessions",
			name, kept, evidence, 100*float64(kept)/float64(evidence), byRole["user"][0], byRole["user"][1],
			byRole["assistant"][0], byRole["assistant"][1], sumBefore, sumAfter)
	}
}

// TestLongMemEvalCompression measures the extractive summariser on real conversations: the
// five longest sessions (by tokens, among those with more than the six turns that stay
// verbatim), and the five with the most turns, each compressed but for its last six turns into
// at most 2,000 tokens. Run it with -v to see the numbers.
func TestLongMemEvalCompression(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a measurement that decodes 50 MB of JSON (half a minute under the race detector); " +
			"run it with: go test -run LongMemEval -v ./internal/summarize/")
	}
	sessions, err := loadLongMemEval(longMemEvalPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("LongMemEval data not found at %s: nothing to measure", longMemEvalPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	const (
		recent    = 6
		maxTokens = 2000
	)
	var long []lmeSession
	for _, s := range sessions {
		if len(s.turns) > recent {
			long = append(long, s)
		}
	}
	t.Logf("%d distinct sessions, %d with more than %d turns", len(sessions), len(long), recent)

	byTokens := slices.Clone(long)
	slices.SortStableFunc(byTokens, func(a, b lmeSession) int {
		return cmp.Or(cmp.Compare(turnTokens(b.turns), turnTokens(a.turns)), cmp.Compare(a.id, b.id))
	})
	byTurns := slices.Clone(long)
	slices.SortStableFunc(byTurns, func(a, b lmeSession) int {
		return cmp.Or(cmp.Compare(len(b.turns), len(a.turns)), cmp.Compare(turnTokens(b.turns), turnTokens(a.turns)), cmp.Compare(a.id, b.id))
	})

	s := New(Config{}, nil, "")
	t.Run("evidence kept", func(t *testing.T) { measureEvidence(t, s, long, recent) })
	for _, sel := range []struct {
		name     string
		sessions []lmeSession
	}{
		{"longest by tokens", byTokens[:min(5, len(byTokens))]},
		{"most turns", byTurns[:min(5, len(byTurns))]},
	} {
		t.Run(sel.name, func(t *testing.T) {
			var rows []string
			var sumBefore, sumAfter int
			for _, sess := range sel.sessions {
				old := sess.turns[:len(sess.turns)-recent]
				before := turnTokens(old)
				res, err := s.Summarize(context.Background(), entriesOf(sess.id, old), maxTokens)
				if err != nil {
					t.Fatal(err)
				}
				after := memory.Estimate(res.Content)
				if after > maxTokens {
					t.Errorf("%s: %d tokens > %d", sess.id, after, maxTokens)
				}
				sumBefore += before
				sumAfter += after
				rows = append(rows, fmt.Sprintf("%-22s %5d turns, %3d compressed  %6d → %5d tokens  (%.1f%%, %s)",
					sess.id, len(sess.turns), len(old), before, after, 100*float64(after)/float64(before), res.Language))
			}
			t.Logf("%s, all but the last %d turns into at most %d tokens (extractive):\n%s\ntotal %d → %d tokens (%.1f%%)",
				sel.name, recent, maxTokens, strings.Join(rows, "\n"), sumBefore, sumAfter, 100*float64(sumAfter)/float64(sumBefore))
		})
	}
}
