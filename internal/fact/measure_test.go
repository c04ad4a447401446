package fact

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
)

// longMemEvalPath is the LongMemEval-S development split shared by the project's measurements.
const longMemEvalPath = "/work/shared/data/longmemeval/longmemeval_s_dev.json.gz"

type lmeTurn struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	HasAnswer bool   `json:"has_answer"`
}

type lmeItem struct {
	QuestionID         string      `json:"question_id"`
	QuestionType       string      `json:"question_type"`
	HaystackSessionIDs []string    `json:"haystack_session_ids"`
	HaystackSessions   [][]lmeTurn `json:"haystack_sessions"`
}

// TestMeasureLongMemEval measures Rules' recall on the evidence turns of LongMemEval-S
// (questions of types single-session-user and knowledge-update): how many of the turns marked
// has_answer produce at least one candidate, and how many candidates a session yields on
// average. It logs the numbers and asserts nothing about them; it skips when the data set is
// absent, in -short mode and under the race detector.
func TestMeasureLongMemEval(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measurement skipped in -short mode and under the race detector (ten times slower); run: go test -v -run Measure ./internal/fact/")
	}
	f, err := os.Open(longMemEvalPath)
	if os.IsNotExist(err) {
		t.Skipf("LongMemEval data not found at %s; skipping the measurement", longMemEvalPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var items []lmeItem
	if err := json.NewDecoder(zr).Decode(&items); err != nil {
		t.Fatalf("decoding %s: %v", longMemEvalPath, err)
	}

	var (
		questions, evidence, evidenceHit, evidenceUser int
		sessions, candidates                           int
		uniqueSessions                                 = map[string]int{} // session id -> candidates
		byType                                         = map[string][2]int{}
		examples                                       []string
	)
	for _, it := range items {
		if it.QuestionType != "single-session-user" && it.QuestionType != "knowledge-update" {
			continue
		}
		questions++
		for si, sess := range it.HaystackSessions {
			sid := fmt.Sprintf("%s#%d", it.QuestionID, si)
			if si < len(it.HaystackSessionIDs) {
				sid = it.HaystackSessionIDs[si]
			}
			turns := make([]Turn, len(sess))
			for j, tu := range sess {
				turns[j] = Turn{ID: fmt.Sprintf("%s_%d", sid, j), Role: tu.Role, Content: tu.Content}
			}
			cands := Rules(turns)
			sessions++
			candidates += len(cands)
			uniqueSessions[sid] = len(cands)
			for j, tu := range sess {
				if !tu.HasAnswer {
					continue
				}
				evidence++
				if tu.Role == "user" {
					evidenceUser++
				}
				bt := byType[it.QuestionType]
				bt[0]++
				hit := false
				for _, c := range cands {
					if slices.Contains(c.Provenance, turns[j].ID) {
						hit = true
						if len(examples) < 12 {
							examples = append(examples, c.Content)
						}
						break
					}
				}
				if hit {
					evidenceHit++
					bt[1]++
				}
				byType[it.QuestionType] = bt
			}
		}
	}
	if questions == 0 || sessions == 0 {
		t.Fatalf("no single-session-user or knowledge-update questions in %s", longMemEvalPath)
	}
	uniqueCands := 0
	for _, n := range uniqueSessions {
		uniqueCands += n
	}
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	t.Logf("questions: %d (single-session-user and knowledge-update)", questions)
	t.Logf("evidence turns (has_answer): %d (%d by the user); with at least one Rules candidate: %d (%.1f%%)",
		evidence, evidenceUser, evidenceHit, pct(evidenceHit, evidence))
	for _, typ := range []string{"single-session-user", "knowledge-update"} {
		bt := byType[typ]
		t.Logf("  %s: %d/%d (%.1f%%)", typ, bt[1], bt[0], pct(bt[1], bt[0]))
	}
	t.Logf("candidates per haystack session: %.2f (%d candidates over %d sessions); over %d distinct sessions: %.2f",
		float64(candidates)/float64(sessions), candidates, sessions, len(uniqueSessions),
		float64(uniqueCands)/float64(len(uniqueSessions)))
	for _, e := range examples {
		t.Logf("  evidence candidate: %s", e)
	}
}
