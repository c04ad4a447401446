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
	Role    string `json:"role"`
	Content string `json:"content"`
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

// TestLongMemEvalCompression measures the extractive summariser on real conversations: the
// five longest sessions (by tokens, among those with more than the six turns that stay
// verbatim), and the five with the most turns, each compressed but for its last six turns into
// at most 2,000 tokens. Run it with -v to see the numbers.
func TestLongMemEvalCompression(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 50 MB of JSON; skipped with -short")
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
				entries := make([]memory.Entry, len(old))
				before := 0
				for i, tr := range old {
					entries[i] = memory.Entry{ID: fmt.Sprintf("%s-%d", sess.id, i), Type: memory.TypeForRole(tr.Role),
						Role: tr.Role, Content: tr.Content, Tokens: memory.Estimate(tr.Content)}
					before += entries[i].Tokens
				}
				res, err := s.Summarize(context.Background(), entries, maxTokens)
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
