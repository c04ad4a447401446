package embed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
)

const (
	testKey   = "sk-embed-0123456789-SECRET"
	testModel = "text-embedding-3-small"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// vectorOf is the fake model: text "t<n>" embeds as (n+1, 2, 0), any other text as (1, 1, 1).
func vectorOf(text string) []float64 {
	if n, err := strconv.Atoi(strings.TrimPrefix(text, "t")); err == nil {
		return []float64{float64(n + 1), 2, 0}
	}
	return []float64{1, 1, 1}
}

// fakeModel answers embeddings requests with vectorOf each input, listed in reverse order
// (clients must place them by index).
func fakeModel() llmtest.Handler {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		req, err := decode(r)
		if err != nil {
			llmtest.WriteError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
			return
		}
		data := make([]llmtest.Embedding, 0, len(req.Input))
		for i := len(req.Input) - 1; i >= 0; i-- {
			data = append(data, llmtest.Embedding{Index: i, Vector: vectorOf(req.Input[i])})
		}
		llmtest.WriteEmbeddings(w, req.Model, data, len(req.Input))
	}
}

func decode(r *http.Request) (llmtest.EmbeddingsRequest, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return llmtest.EmbeddingsRequest{}, err
	}
	return llmtest.DecodeEmbeddings(buf.Bytes())
}

func inputs(t *testing.T, srv *llmtest.Server) [][]string {
	t.Helper()
	var out [][]string
	for _, r := range srv.Requests() {
		req, err := llmtest.DecodeEmbeddings(r.Body)
		if err != nil {
			t.Fatalf("decoding %s: %v", r.Body, err)
		}
		out = append(out, req.Input)
	}
	return out
}

func newOpenAI(t *testing.T, baseURL string, edit func(*embed.Config)) (*embed.OpenAI, *lockedBuffer) {
	t.Helper()
	cfg := embed.Config{Endpoint: llm.Endpoint{
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
	logs := &lockedBuffer{}
	o, err := embed.NewOpenAI(cfg, zerolog.New(logs).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatalf("NewOpenAI: %v", err)
	}
	return o, logs
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}

// checkVector asserts vec is the normalised vectorOf(text).
func checkVector(t *testing.T, text string, vec []float32) {
	t.Helper()
	want := vectorOf(text)
	var norm float64
	for _, x := range want {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	if len(vec) != len(want) {
		t.Fatalf("vector of %q has length %d, want %d", text, len(vec), len(want))
	}
	var got float64
	for i, x := range vec {
		got += float64(x) * float64(x)
		if math.Abs(float64(x)-want[i]/norm) > 1e-6 {
			t.Fatalf("vector of %q = %v, want %v normalised", text, vec, want)
		}
	}
	if math.Abs(got-1) > 1e-5 {
		t.Fatalf("vector of %q has squared norm %v, want 1", text, got)
	}
}

func TestEmbedBatchesInOrder(t *testing.T) {
	srv := llmtest.NewServer(t, fakeModel())
	o, logs := newOpenAI(t, srv.URL, nil)
	if d := o.Dim(); d != 0 {
		t.Fatalf("Dim before any call = %d, want 0", d)
	}

	in := texts(130)
	vecs, err := o.Embed(context.Background(), in)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vecs) != len(in) {
		t.Fatalf("got %d vectors for %d texts", len(vecs), len(in))
	}
	for i, text := range in {
		checkVector(t, text, vecs[i])
	}
	if d := o.Dim(); d != 3 {
		t.Fatalf("Dim = %d, want 3", d)
	}

	reqs := srv.Requests()
	batches := inputs(t, srv)
	if len(batches) != 3 || len(batches[0]) != 64 || len(batches[1]) != 64 || len(batches[2]) != 2 {
		t.Fatalf("batches of %v texts, want 64, 64 and 2", lens(batches))
	}
	if got := strings.Join(append(append(batches[0], batches[1]...), batches[2]...), ","); got != strings.Join(in, ",") {
		t.Fatalf("texts were sent as %s", got)
	}
	for _, r := range reqs {
		if r.Method != http.MethodPost || r.Path != llmtest.BasePath+"/embeddings" {
			t.Fatalf("request = %s %s, want POST %s/embeddings", r.Method, r.Path, llmtest.BasePath)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Fatalf("Authorization = %q, want the bearer key", got)
		}
		req, _ := llmtest.DecodeEmbeddings(r.Body)
		if req.Model != testModel || req.EncodingFormat != "float" || req.Dimensions != 0 {
			t.Fatalf("request = %+v, want model %s, float encoding, no dimensions", req, testModel)
		}
	}
	if l := logs.String(); strings.Contains(l, testKey) || strings.Contains(l, "t129") {
		t.Fatalf("logs reveal the key or a text:\n%s", l)
	}
}

func lens(batches [][]string) []int {
	out := make([]int, len(batches))
	for i, b := range batches {
		out[i] = len(b)
	}
	return out
}

func TestEmbedCache(t *testing.T) {
	srv := llmtest.NewServer(t, fakeModel())
	o, _ := newOpenAI(t, srv.URL, nil)
	ctx := context.Background()

	steps := []struct {
		texts []string
		sent  []string // nil: no request
	}{
		{[]string{"t1", "t2"}, []string{"t1", "t2"}},
		{[]string{"t2", "t1"}, nil},
		{[]string{"t2", "t3", "t1"}, []string{"t3"}},
		{[]string{"t4", "t4", "t5", "t4"}, []string{"t4", "t5"}},
		{[]string{"t5", "t4", "t3", "t2", "t1"}, nil},
	}
	for i, step := range steps {
		before := srv.Count()
		vecs, err := o.Embed(ctx, step.texts)
		if err != nil {
			t.Fatalf("step %d: Embed: %v", i, err)
		}
		for j, text := range step.texts {
			checkVector(t, text, vecs[j])
		}
		batches := inputs(t, srv)[before:]
		switch {
		case step.sent == nil && len(batches) != 0:
			t.Fatalf("step %d: sent %v, want no request", i, batches)
		case step.sent != nil && (len(batches) != 1 || strings.Join(batches[0], ",") != strings.Join(step.sent, ",")):
			t.Fatalf("step %d: sent %v, want one request of %v", i, batches, step.sent)
		}
		// Callers own what they get: scribbling on it must not reach the cache.
		for _, v := range vecs {
			v[0] = 42
		}
	}
}

func TestEmbedDisabledCache(t *testing.T) {
	srv := llmtest.NewServer(t, fakeModel())
	o, _ := newOpenAI(t, srv.URL, func(c *embed.Config) { c.CacheEntries = -1 })
	for range 2 {
		if _, err := o.Embed(context.Background(), []string{"t1"}); err != nil {
			t.Fatalf("Embed: %v", err)
		}
	}
	if n := srv.Count(); n != 2 {
		t.Fatalf("server hits = %d, want 2 without a cache", n)
	}
}

func TestEmbedRetriesOn429(t *testing.T) {
	model := fakeModel()
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("retry-after-ms", "100")
			llmtest.WriteError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "slow down")
			return
		}
		model(w, r, n)
	})
	o, logs := newOpenAI(t, srv.URL, func(c *embed.Config) { c.MaxBackoff = 10 * time.Second })
	vecs, err := o.Embed(context.Background(), []string{"t7"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	checkVector(t, "t7", vecs[0])
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server hits = %d, want 2", len(reqs))
	}
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 100*time.Millisecond {
		t.Fatalf("retried after %s, want at least the 100ms the server asked for", gap)
	}
	if l := logs.String(); !strings.Contains(l, `"level":"warn"`) || strings.Contains(l, testKey) {
		t.Fatalf("want a retry warning without the key, got:\n%s", l)
	}
}

func TestEmbedFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		edit      func(*embed.Config)
		texts     []string
		handler   llmtest.Handler
		hits      int
		wantIs    []error
		wantIsNot []error
	}{
		{
			name: "bad key",
			handler: func(w http.ResponseWriter, r *http.Request, _ int) {
				llmtest.WriteError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "bad key "+testKey)
			},
			hits: 1, wantIs: []error{llm.ErrRejected}, wantIsNot: []error{llm.ErrUnavailable},
		},
		{
			name: "server errors",
			handler: func(w http.ResponseWriter, r *http.Request, _ int) {
				llmtest.WriteError(w, http.StatusBadGateway, "server_error", "", "upstream")
			},
			hits: 3, wantIs: []error{llm.ErrUnavailable}, wantIsNot: []error{llm.ErrRejected},
		},
		{
			name: "too few embeddings",
			handler: func(w http.ResponseWriter, r *http.Request, _ int) {
				llmtest.WriteEmbeddings(w, testModel, []llmtest.Embedding{{Index: 0, Vector: []float64{1, 0}}}, 1)
			},
			texts: []string{"t1", "t2"},
			hits:  3, wantIs: []error{llm.ErrMalformed, llm.ErrUnavailable},
		},
		{
			name: "repeated index",
			handler: func(w http.ResponseWriter, r *http.Request, _ int) {
				llmtest.WriteEmbeddings(w, testModel, []llmtest.Embedding{{Index: 0, Vector: []float64{1, 0}}, {Index: 0, Vector: []float64{0, 1}}}, 1)
			},
			texts: []string{"t1", "t2"},
			hits:  3, wantIs: []error{llm.ErrMalformed, llm.ErrUnavailable},
		},
		{
			name: "not JSON",
			handler: func(w http.ResponseWriter, r *http.Request, _ int) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"data": [`))
			},
			hits: 3, wantIs: []error{llm.ErrMalformed, llm.ErrUnavailable},
		},
		{
			name:    "dimensions not honoured",
			edit:    func(c *embed.Config) { c.Dimensions = 256 },
			handler: fakeModel(), // answers 3-dimensional vectors
			hits:    1, wantIs: []error{llm.ErrRejected}, wantIsNot: []error{llm.ErrUnavailable},
		},
		{
			name:    "empty text",
			texts:   []string{"t1", ""},
			handler: fakeModel(),
			hits:    0, wantIs: []error{llm.ErrRejected},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, tc.handler)
			o, _ := newOpenAI(t, srv.URL, tc.edit)
			in := tc.texts
			if in == nil {
				in = []string{"t1"}
			}
			vecs, err := o.Embed(context.Background(), in)
			if err == nil || vecs != nil {
				t.Fatalf("Embed = %v, %v; want no vectors and an error", vecs, err)
			}
			for _, target := range tc.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("err = %v, want it to wrap %v", err, target)
				}
			}
			for _, target := range tc.wantIsNot {
				if errors.Is(err, target) {
					t.Errorf("err = %v, want it not to wrap %v", err, target)
				}
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("err reveals the key: %v", err)
			}
			if n := srv.Count(); n != tc.hits {
				t.Errorf("server hits = %d, want %d", n, tc.hits)
			}
		})
	}
}

func TestEmbedCancelled(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	o, _ := newOpenAI(t, srv.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := o.Embed(ctx, []string{"t1"})
		done <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the server")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Embed did not return after its context was cancelled")
	}
}

func TestEmbedDimensionsAndName(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		req, _ := decode(r)
		data := make([]llmtest.Embedding, len(req.Input))
		for i := range data {
			data[i] = llmtest.Embedding{Index: i, Vector: []float64{3, 4}}
		}
		llmtest.WriteEmbeddings(w, testModel, data, 1)
	})
	o, _ := newOpenAI(t, srv.URL, func(c *embed.Config) { c.Dimensions = 2 })
	vecs, err := o.Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if vecs[0][0] != 0.6 || vecs[0][1] != 0.8 {
		t.Fatalf("vector = %v, want [0.6 0.8]", vecs[0])
	}
	req, _ := llmtest.DecodeEmbeddings(srv.Requests()[0].Body)
	if req.Dimensions != 2 {
		t.Fatalf("dimensions sent = %d, want 2", req.Dimensions)
	}
	if got, want := o.Name(), "openai-compatible:"+testModel+"@2"; got != want {
		t.Fatalf("Name = %q, want %q", got, want)
	}
	plain, _ := newOpenAI(t, srv.URL, func(c *embed.Config) { c.Model = "nomic-embed-text:latest" })
	if got, want := plain.Name(), "openai-compatible:nomic-embed-text:latest"; got != want {
		t.Fatalf("Name = %q, want %q", got, want)
	}
}

func TestEmbedConcurrent(t *testing.T) {
	srv := llmtest.NewServer(t, fakeModel())
	o, _ := newOpenAI(t, srv.URL, func(c *embed.Config) { c.BatchSize = 7; c.CacheEntries = 20 })
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			in := texts(40 + g)
			vecs, err := o.Embed(context.Background(), in)
			if err == nil {
				for i, v := range vecs {
					if want := float32(i+1) / float32(math.Sqrt(float64((i+1)*(i+1)+4))); math.Abs(float64(v[0]-want)) > 1e-6 {
						err = fmt.Errorf("vector %d = %v, want first component %v", i, v, want)
						break
					}
				}
			}
			errs <- err
		}()
	}
	for range 4 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Embed did not finish")
		}
	}
}

func TestEmbedNothing(t *testing.T) {
	srv := llmtest.NewServer(t, fakeModel())
	o, _ := newOpenAI(t, srv.URL, nil)
	vecs, err := o.Embed(context.Background(), nil)
	if err != nil || len(vecs) != 0 || srv.Count() != 0 {
		t.Fatalf("Embed(nil) = %v, %v after %d requests; want nothing", vecs, err, srv.Count())
	}
}
