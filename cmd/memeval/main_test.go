package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsRejected: bad embedder, ranking and ablation flags fail before anything starts.
func TestFlagsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rank", "both"}, "fusion rank"},
		{[]string{"--vector-weight", "-1"}, "vector weight"},
		{[]string{"--embed", "glove"}, "--embed"},
		{[]string{"--embed", "off", "--embed-model", "m"}, "--embed off"},
		{[]string{"--ablation", "--nats", "nats://127.0.0.1:1"}, "--ablation"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"--quiet", "--log-level", "error"}, tc.args...), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %q", tc.args, err, tc.want)
		}
	}
}

// TestMissingDataNamesTheDoc: a --data folder without a set's files fails before a service
// starts, naming the missing file and docs/eval.md; the sets asked for are the ones checked.
func TestMissingDataNamesTheDoc(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "madial_bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"MADial-Bench-zh-memory.json", "MADial-Bench-zh-dialogue.json"} {
		if err := os.WriteFile(filepath.Join(dir, "madial_bench", f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		sets, want string
	}{
		{"", "set lme needs " + filepath.Join("longmemeval", "longmemeval_s_dev.json.gz")},
		{"madial-zh,madial-en", "set madial-en needs " + filepath.Join("madial_bench", "MADial-Bench-en-memory.json")},
	} {
		args := []string{"--quiet", "--log-level", "error", "--data", dir}
		if tc.sets != "" {
			args = append(args, "--sets", tc.sets)
		}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "docs/eval.md") {
			t.Errorf("--sets %q: error %v, want one saying %q and naming docs/eval.md", tc.sets, err, tc.want)
		}
	}
	if err := checkData(dir, []string{"madial-zh"}); err != nil {
		t.Errorf("madial-zh's files are there, yet: %v", err)
	}
}
