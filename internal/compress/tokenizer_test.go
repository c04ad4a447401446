package compress_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/compress"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/memory"
)

// TestCompressorCountsWithItsTokenizer checks that Config.Tokenizer is the counter a summary is
// capped by and counted with. The turns are codes, which o200k counts at about twice the estimate: an extractive
// summary capped by the estimate overflows the cap in o200k tokens, one capped by o200k fits.
func TestCompressorCountsWithItsTokenizer(t *testing.T) {
	o200k, err := memory.NewCounter("o200k")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tokenizer string
		fits      bool // whether the summary fits its cap in o200k tokens
	}{
		{"o200k", true},
		{"estimate", false},
	} {
		t.Run(tc.tokenizer, func(t *testing.T) {
			p := newPipelineCompressing(t, ingest.Config{Budget: smallBudget(800), Tokenizer: "o200k", IdleTimeout: -1},
				compress.Config{Tokenizer: tc.tokenizer}, nil)
			for i := range 30 {
				text := fmt.Sprintf("Turn %d. Code %x-%x. Ticket %x%x.", i, 0x9e3779b9*(i+1), 0x85ebca6b*(i+3), 0xc2b2ae35*(i+5), 0x27d4eb2f*(i+7))
				p.publish("codes", fmt.Sprintf("codes-t%03d", i), []string{"user", "assistant"}[i%2], text, day.Add(time.Duration(i)*time.Minute))
			}
			st := p.summarized("codes", 20*time.Second)
			prs := p.pressures("codes")
			if len(prs) == 0 {
				t.Fatal("no pressure event")
			}
			limit := prs[0].SummaryTokens
			var sum memory.Entry
			for _, e := range st.Short.Entries() {
				if e.Type == memory.Summary && e.Content != "" {
					sum = e
					break
				}
			}
			got, est := o200k.Count(sum.Content), memory.Estimate(sum.Content)
			t.Logf("summary of %d o200k tokens (%d estimated), cap %d: %q", got, est, limit, sum.Content)
			if !strings.Contains(sum.Content, "Turn 0") {
				t.Fatalf("summary %q holds none of the turns", sum.Content)
			}
			if fits := got <= limit; fits != tc.fits {
				t.Fatalf("tokenizer %s: summary of %d o200k tokens against a cap of %d, want fits=%v", tc.tokenizer, got, limit, tc.fits)
			}
			// The stored summary's token count is the compressor's counter's too.
			stored, err := longtermSummary(p, prs[0])
			if err != nil {
				t.Fatal(err)
			}
			want := est
			if tc.tokenizer == "o200k" {
				want = got
			}
			if stored.Tokens != want {
				t.Fatalf("stored summary has %d tokens, want %d (%s)", stored.Tokens, want, tc.tokenizer)
			}
		})
	}
}
