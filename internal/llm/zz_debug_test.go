package llm_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
)

func TestZZDebug(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1:
			llmtest.WriteError(w, 429, "rate_limit_error", "rate_limit_exceeded", "x")
		case 2:
			w.Write([]byte("{bad"))
		case 3:
			llmtest.WriteCompletion(w, "m", "ok", 0, 0)
		default:
			llmtest.WriteError(w, 400, "invalid_request_error", "context_length_exceeded", "x")
		}
	})
	c, sink := newClient(t, srv.URL, nil)
	_, err := c.Complete(context.Background(), request())
	t.Log(err)
	_, err = c.Complete(context.Background(), request())
	t.Log(err)
	t.Log(sink.String())
	t.Log(llm.Config{BaseURL: "http://x/v1", Model: "m", APIKey: "k"})
}
