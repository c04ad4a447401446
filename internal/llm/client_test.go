package llm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/pkg/memory"
)

const (
	testKey   = "sk-test-0123456789abcdef-SECRET"
	testModel = "glm-4-flash"
	// secretText is message content that must never reach the logs.
	secretText = "the launch code is 0000"
)

// logSink captures a client's log output and signals each retry warning.
type logSink struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	retrying chan struct{}
}

func newLogSink() *logSink { return &logSink{retrying: make(chan struct{}, 64)} }

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.Contains(p, []byte("retrying")) {
		select {
		case s.retrying <- struct{}{}:
		default:
		}
	}
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// newClient returns a client of srv with small backoffs, its log captured in the returned
// sink; edit adjusts the config.
func newClient(t *testing.T, baseURL string, edit func(*llm.Config)) (*llm.Client, *logSink) {
	t.Helper()
	cfg := llm.Config{Endpoint: llm.Endpoint{
		BaseURL:     baseURL,
		APIKey:      testKey,
		Model:       testModel,
		MaxAttempts: 3,
		MinBackoff:  5 * time.Millisecond,
		MaxBackoff:  20 * time.Millisecond,
	}}
	if edit != nil {
		edit(&cfg)
	}
	sink := newLogSink()
	c, err := llm.New(cfg, zerolog.New(sink).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, sink
}

func request() llm.Request {
	return llm.Request{
		Purpose:   "map",
		MaxTokens: 256,
		Messages: []llm.Message{
			{Role: "system", Content: "Summarise the conversation."},
			{Role: "user", Content: secretText},
		},
	}
}

func decodeChat(t *testing.T, r llmtest.Request) llmtest.ChatRequest {
	t.Helper()
	req, err := llmtest.DecodeChat(r.Body)
	if err != nil {
		t.Fatalf("decoding request body %s: %v", r.Body, err)
	}
	return req
}

func TestCompleteWithUsage(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		llmtest.WriteCompletion(w, testModel+"-0520", "a summary", 11, 7)
	})
	c, _ := newClient(t, srv.URL, nil)

	resp, err := c.Complete(context.Background(), request())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := llm.Response{
		Content:  "a summary",
		Usage:    memory.Usage{Calls: 1, InputTokens: 11, OutputTokens: 7},
		Model:    testModel + "-0520",
		Attempts: 1,
	}
	if resp != want {
		t.Fatalf("response = %+v, want %+v", resp, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	if reqs[0].Method != http.MethodPost || reqs[0].Path != llmtest.BasePath+"/chat/completions" {
		t.Fatalf("request = %s %s, want POST %s/chat/completions", reqs[0].Method, reqs[0].Path, llmtest.BasePath)
	}
	body := decodeChat(t, reqs[0])
	if body.Model != testModel {
		t.Errorf("model = %q, want %q", body.Model, testModel)
	}
	if len(body.Messages) != 2 || body.Messages[0] != (llmtest.ChatMessage{Role: "system", Content: "Summarise the conversation."}) ||
		body.Messages[1] != (llmtest.ChatMessage{Role: "user", Content: secretText}) {
		t.Errorf("messages = %+v", body.Messages)
	}
	if body.MaxTokens == nil || *body.MaxTokens != 256 {
		t.Errorf("max_tokens = %v, want 256", body.MaxTokens)
	}
	if body.Temperature == nil || *body.Temperature != llm.DefaultTemperature {
		t.Errorf("temperature = %v, want %v", body.Temperature, llm.DefaultTemperature)
	}
	if body.ResponseFormat != nil {
		t.Errorf("response_format = %+v, want none without JSON", body.ResponseFormat)
	}
}

func TestCompleteWithoutUsageEstimates(t *testing.T) {
	const answer = "a summary of what was said, in a few words"
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		llmtest.WriteCompletion(w, testModel, answer, 0, 0)
	})
	c, _ := newClient(t, srv.URL, nil)

	req := request()
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	var in int
	for _, m := range req.Messages {
		in += memory.Estimate(m.Content)
	}
	want := memory.Usage{Calls: 1, InputTokens: in, OutputTokens: memory.Estimate(answer)}
	if resp.Usage != want || !resp.Estimated {
		t.Fatalf("usage = %+v estimated=%v, want %+v estimated", resp.Usage, resp.Estimated, want)
	}
}

func TestCompleteRequestOptions(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		llmtest.WriteCompletion(w, testModel, `{"facts":[]}`, 3, 4)
	})
	c, _ := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.Temperature = -1 })

	zero := 0.0
	for _, tc := range []struct {
		name        string
		req         llm.Request
		format      string
		temperature *float64
	}{
		{"json mode", llm.Request{JSON: true, Messages: []llm.Message{{Role: "user", Content: "facts as JSON"}}}, "json_object", nil},
		{"temperature override", llm.Request{Temperature: &zero, Messages: []llm.Message{{Role: "user", Content: "hi"}}}, "", &zero},
		{"no temperature, no max tokens", llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Count()
			if _, err := c.Complete(context.Background(), tc.req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			reqs := srv.Requests()
			body := decodeChat(t, reqs[before])
			var format string
			if body.ResponseFormat != nil {
				format = body.ResponseFormat.Type
			}
			if format != tc.format {
				t.Errorf("response_format = %q, want %q", format, tc.format)
			}
			if (body.Temperature == nil) != (tc.temperature == nil) ||
				(body.Temperature != nil && *body.Temperature != *tc.temperature) {
				t.Errorf("temperature = %v, want %v", body.Temperature, tc.temperature)
			}
			if tc.req.MaxTokens == 0 && body.MaxTokens != nil {
				t.Errorf("max_tokens = %d, want none", *body.MaxTokens)
			}
		})
	}
}

func TestCompleteInvalidRequestMakesNoCall(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		llmtest.WriteCompletion(w, testModel, "x", 1, 1)
	})
	c, _ := newClient(t, srv.URL, nil)
	for name, req := range map[string]llm.Request{
		"no messages": {},
		"bad role":    {Messages: []llm.Message{{Role: "tool", Content: "x"}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := c.Complete(context.Background(), req); !errors.Is(err, llm.ErrRejected) {
				t.Fatalf("err = %v, want ErrRejected", err)
			}
		})
	}
	if n := srv.Count(); n != 0 {
		t.Fatalf("server got %d requests, want 0", n)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	// inTwoSeconds is an HTTP date at least a second away (the format drops fractions).
	inTwoSeconds := func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) }
	for _, tc := range []struct {
		name, header string
		value        func() string
		minGap       time.Duration
	}{
		{"seconds", "Retry-After", func() string { return "1" }, time.Second},
		{"milliseconds", "retry-after-ms", func() string { return "300" }, 300 * time.Millisecond},
		{"HTTP date", "Retry-After", inTwoSeconds, 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					w.Header().Set(tc.header, tc.value())
					llmtest.WriteError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "slow down")
					return
				}
				llmtest.WriteCompletion(w, testModel, "ok", 1, 1)
			})
			c, _ := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.MaxBackoff = 30 * time.Second })

			resp, err := c.Complete(context.Background(), request())
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Attempts != 2 {
				t.Fatalf("attempts = %d, want 2", resp.Attempts)
			}
			reqs := srv.Requests()
			if gap := reqs[1].At.Sub(reqs[0].At); gap < tc.minGap {
				t.Fatalf("retried %s after the 429, want at least %s", gap, tc.minGap)
			}
		})
	}
}

func TestRetryAfterIsCappedAtMaxBackoff(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "3600")
			llmtest.WriteError(w, http.StatusTooManyRequests, "rate_limit_error", "", "slow down")
			return
		}
		llmtest.WriteCompletion(w, testModel, "ok", 1, 1)
	})
	c, _ := newClient(t, srv.URL, nil) // MaxBackoff 20ms
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Complete(ctx, request())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Attempts != 2 {
		t.Fatalf("attempts = %d, want 2", resp.Attempts)
	}
}

func TestTransientStatusIsRetried(t *testing.T) {
	for _, code := range []int{408, 409, 429, 500, 502, 503, 504} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					llmtest.WriteError(w, code, "server_error", "", "try again")
					return
				}
				llmtest.WriteCompletion(w, testModel, "ok", 1, 1)
			})
			c, sink := newClient(t, srv.URL, nil)
			resp, err := c.Complete(context.Background(), request())
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Attempts != 2 || srv.Count() != 2 {
				t.Fatalf("attempts = %d, server hits = %d, want 2 and 2", resp.Attempts, srv.Count())
			}
			if !strings.Contains(sink.String(), `"level":"warn"`) {
				t.Fatalf("no warning logged for the retry:\n%s", sink)
			}
		})
	}
}

func TestServerErrorStormIsUnavailable(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("upstream exploded"))
	})
	c, _ := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.MaxAttempts = 4 })
	_, err := c.Complete(context.Background(), request())
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if errors.Is(err, llm.ErrRejected) || errors.Is(err, llm.ErrMalformed) {
		t.Fatalf("err = %v, want neither ErrRejected nor ErrMalformed", err)
	}
	if n := srv.Count(); n != 4 {
		t.Fatalf("server hits = %d, want MaxAttempts = 4", n)
	}
}

func TestPermanentStatusIsRejectedAfterOneAttempt(t *testing.T) {
	for _, tc := range []struct {
		code       int
		typ, code2 string
	}{
		{401, "invalid_request_error", "invalid_api_key"},
		{400, "invalid_request_error", "context_length_exceeded"},
		{403, "permission_error", ""},
		{404, "invalid_request_error", "model_not_found"},
		{422, "", ""},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				// Like OpenAI, quote part of the key in the message: it must not reach errors.
				llmtest.WriteError(w, tc.code, tc.typ, tc.code2, "Incorrect API key provided: "+testKey)
			})
			c, _ := newClient(t, srv.URL, nil)
			_, err := c.Complete(context.Background(), request())
			if !errors.Is(err, llm.ErrRejected) || errors.Is(err, llm.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrRejected only", err)
			}
			if n := srv.Count(); n != 1 {
				t.Fatalf("server hits = %d, want 1", n)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error quotes the API key: %v", err)
			}
			if tc.code2 != "" && !strings.Contains(err.Error(), tc.code2) {
				t.Fatalf("error %q does not name the provider's code %q", err, tc.code2)
			}
		})
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		<-r.Context().Done() // never answers; the client's attempt timeout ends the request
	})
	c, _ := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.Timeout = 100 * time.Millisecond })
	_, err := c.Complete(context.Background(), request())
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v wraps context.DeadlineExceeded though the caller's context did not end", err)
	}
	if n := srv.Count(); n != 3 {
		t.Fatalf("server hits = %d, want MaxAttempts = 3", n)
	}
}

func TestConnectionErrorIsRetried(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL + "/v1"
	dead.Close()
	c, sink := newClient(t, url, nil)
	_, err := c.Complete(context.Background(), request())
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := strings.Count(sink.String(), "retrying"); n != 2 {
		t.Fatalf("logged %d retries, want 2:\n%s", n, sink)
	}
}

func TestMalformedResponseIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
	}{
		{"not JSON", "application/json", `{"id": "chatcmpl-1", "choices": [`},
		{"no choices", "application/json", `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[]}`},
		{"empty body", "application/json", ``},
		{"HTML", "text/html", `<html>502 Bad Gateway</html>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = w.Write([]byte(tc.body))
			})
			c, _ := newClient(t, srv.URL, nil)
			_, err := c.Complete(context.Background(), request())
			if !errors.Is(err, llm.ErrMalformed) || !errors.Is(err, llm.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrMalformed and ErrUnavailable", err)
			}
			if n := srv.Count(); n != 3 {
				t.Fatalf("server hits = %d, want MaxAttempts = 3", n)
			}
		})
	}
}

func TestMalformedThenValidSucceeds(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			llmtest.WriteJSON(w, http.StatusOK, map[string]any{"choices": []any{}})
			return
		}
		llmtest.WriteCompletion(w, testModel, "ok", 1, 1)
	})
	c, _ := newClient(t, srv.URL, nil)
	resp, err := c.Complete(context.Background(), request())
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("Complete = %+v, %v; want success on attempt 2", resp, err)
	}
}

func TestCancelDuringBackoffReturnsPromptly(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Retry-After", "30")
		llmtest.WriteError(w, http.StatusServiceUnavailable, "server_error", "", "overloaded")
	})
	c, sink := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.MaxBackoff = time.Minute })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, request())
		done <- err
	}()
	select {
	case <-sink.retrying: // logged just before the client starts its 30s wait
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not start waiting to retry")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Complete did not return after its context was cancelled")
	}
	if n := srv.Count(); n != 1 {
		t.Fatalf("server hits = %d, want 1", n)
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	const calls = 6
	var inflight, peak atomic.Int32
	arrived := make(chan struct{}, calls)
	release := make(chan struct{})
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		n := inflight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		inflight.Add(-1)
		llmtest.WriteCompletion(w, testModel, "ok", 1, 1)
	})
	c, _ := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.MaxConcurrency = 2 })

	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := c.Complete(context.Background(), request())
			errs <- err
		}()
	}
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("fewer than 2 requests reached the server")
		}
	}
	for i := range calls {
		select {
		case release <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d never reached the server", i+1)
		}
	}
	for range calls {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call did not finish")
		}
	}
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak requests in flight = %d, want MaxConcurrency = 2", p)
	}
}

func TestCancelWhileWaitingForSlot(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	c, _ := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.MaxConcurrency = 1; cfg.MaxAttempts = 1 })

	holder, release := context.WithCancel(context.Background())
	defer release()
	held := make(chan error, 1)
	go func() {
		_, err := c.Complete(holder, request())
		held <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first call never reached the server")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Complete(ctx, request()); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	release()
	select {
	case err := <-held:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("held call: err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first call did not end")
	}
	if n := srv.Count(); n != 1 {
		t.Fatalf("server hits = %d, want 1", n)
	}
}

func TestAPIKeyIsSentButNeverLogged(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			llmtest.WriteError(w, http.StatusTooManyRequests, "rate_limit_error", "", "slow down "+testKey)
			return
		}
		llmtest.WriteCompletion(w, testModel, "ok", 1, 1)
	})
	c, sink := newClient(t, srv.URL, nil)
	if _, err := c.Complete(context.Background(), request()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	for _, r := range srv.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Fatalf("Authorization = %q, want the bearer key", got)
		}
	}
	logs := sink.String()
	if !strings.Contains(logs, `"level":"debug"`) || !strings.Contains(logs, `"level":"warn"`) {
		t.Fatalf("want a debug line for the call and a warning for the retry, got:\n%s", logs)
	}
	for _, secret := range []string{testKey, "sk-test", secretText} {
		if strings.Contains(logs, secret) {
			t.Fatalf("logs contain %q:\n%s", secret, logs)
		}
	}
}

func TestNoAPIKeySendsNoAuthorization(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		llmtest.WriteCompletion(w, testModel, "ok", 1, 1)
	})
	c, _ := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.APIKey = "" })
	if _, err := c.Complete(context.Background(), request()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "" {
		t.Fatalf("Authorization = %q, want none", got)
	}
}

func TestClientIgnoresOpenAIEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-environment")
	t.Setenv("OPENAI_ORG_ID", "org-from-environment")
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		llmtest.WriteCompletion(w, testModel, "ok", 1, 1)
	})
	c, _ := newClient(t, srv.URL, func(cfg *llm.Config) { cfg.APIKey = "" })
	if _, err := c.Complete(context.Background(), request()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Fatalf("request carries credentials from the environment: %v", h)
	}
}

func TestModelAndProvider(t *testing.T) {
	for _, tc := range []struct{ url, provider string }{
		{"https://api.openai.com/v1", "api.openai.com"},
		{"http://localhost:11434/v1", "localhost:11434"},
		{"https://open.bigmodel.cn/api/paas/v4", "open.bigmodel.cn"},
	} {
		c, _ := newClient(t, tc.url, nil)
		if c.Provider() != tc.provider || c.Model() != testModel {
			t.Errorf("%s: provider, model = %q, %q; want %q, %q", tc.url, c.Provider(), c.Model(), tc.provider, testModel)
		}
	}
}
