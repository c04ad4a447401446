package inspector_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/inspector"
)

// The search results show the relevance the retriever ranked by (the fusion of
// internal/retrieve/fusion.go, sent as scores.relevance when it differs from the keyword
// relevance), and their legend says so: not a mean of keyword and vector relevance.
func TestScoreLegendAndRelevance(t *testing.T) {
	b, err := fs.ReadFile(inspector.Assets(), "app.js")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	legend := regexp.MustCompile(`(?s)const scoreLegend = (.*?);\n`).FindStringSubmatch(src)
	if legend == nil {
		t.Fatal("app.js has no scoreLegend")
	}
	text := strings.Join(regexp.MustCompile(`"([^"]*)"`).FindAllString(legend[1], -1), "")
	for _, want := range []string{"score = relevance × decay × weight", "fused", "vector", "keyword relevance"} {
		if !strings.Contains(text, want) {
			t.Errorf("the score legend %s does not say %q", text, want)
		}
	}
	if strings.Contains(src, "(keyword + vector) / 2") {
		t.Error("app.js still describes the relevance as the mean of keyword and vector")
	}

	// The column itself, run in Node.js when it is there (the browser test runs without vectors).
	fn := regexp.MustCompile(`(?s)\n  function relevance\(sc\) \{.*?\n  \}\n`).FindString(src)
	if fn == "" {
		t.Fatal("app.js has no function relevance")
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed; .ci/run installs it")
		}
		t.Skip("node is not installed: the relevance column is not run")
	}
	cases := []struct {
		scores string
		want   float64
	}{
		{`{"keyword": 0.3, "decay": 1, "weight": 1}`, 0.3},                        // no embedder
		{`{"keyword": 0.5, "vector": 0.9, "decay": 1, "weight": 1}`, 0.5},         // fused equals keyword
		{`{"keyword": 0.5, "vector": 0.9, "relevance": 0.62, "weight": 1}`, 0.62}, // fused, as sent
		{`{"keyword": 0, "vector": 0.8, "relevance": 0.2, "weight": 1.2}`, 0.2},   // found by vector alone
	}
	var script strings.Builder
	script.WriteString(fn + "\nconsole.log(JSON.stringify([")
	for i, c := range cases {
		if i > 0 {
			script.WriteString(",")
		}
		script.WriteString("relevance(" + c.scores + ")")
	}
	script.WriteString("]));\n")
	out, err := exec.Command("node", "-e", script.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	var got []float64
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("node printed %s (%v)", out, err)
	}
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("relevance(%s) = %v, want %v", c.scores, got[i], c.want)
		}
	}
}
