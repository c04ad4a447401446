package main

import (
	"bytes"
	"context"
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
