package compress_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
)

// A compression whose reduce call fails after its map calls succeeded is redelivered; the new
// attempt reuses the map answers from the memo and asks the model only the reduce again. Once
// the summary is stored its memo is gone.
func TestInterruptedCompressionRepeatsNoCall(t *testing.T) {
	fake := &fakeLLM{}
	ok := fake.handler()
	var mu sync.Mutex
	seen := map[string]int{}
	failed := false
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		body := readAll(r)
		req, err := llmtest.DecodeChat(body)
		if err != nil {
			llmtest.WriteError(w, 400, "invalid_request_error", "", err.Error())
			return
		}
		user := req.Messages[len(req.Messages)-1].Content
		mu.Lock()
		seen[user]++
		fail := !failed && strings.HasPrefix(user, "Summaries of the")
		failed = failed || fail
		mu.Unlock()
		if fail {
			llmtest.WriteError(w, 500, "server_error", "", "the reduce fails once")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ok(w, r, n)
	})
	p := newPipeline(t, smallBudget(800), newClient(t, srv, 1))
	p.converse("memo", 0, 30, false)
	p.summarized("memo", 20*time.Second)

	mu.Lock()
	defer mu.Unlock()
	if !failed {
		t.Fatal("no reduce call was made: the test needs a compression of several groups")
	}
	maps, reduces := 0, 0
	for user, n := range seen {
		if strings.HasPrefix(user, "Summaries of the") {
			reduces++
			if n != 2 {
				t.Errorf("the reduce was asked %d times, want 2 (the failure and the retry)", n)
			}
			continue
		}
		maps++
		if n != 1 {
			t.Errorf("a map call was asked %d times, want 1: %.60q", n, user)
		}
	}
	if maps < 2 {
		t.Fatalf("%d map calls, want several", maps)
	}
	ctx := context.Background()
	kv, err := p.env.JS.KeyValue(ctx, p.topo.MemoBucket())
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		keys, err := kv.ListKeys(ctx)
		if err != nil {
			return err
		}
		var left []string
		for k := range keys.Keys() {
			left = append(left, k)
		}
		if len(left) > 0 {
			return fmt.Errorf("memo keys left after the summary was stored: %v", left)
		}
		return nil
	})
}
