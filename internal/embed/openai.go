// Package embed turns texts into embedding vectors for semantic recall.
//
// OpenAI embeds with any server that speaks the OpenAI embeddings API (OpenAI, GLM, Ollama,
// vLLM, the llama.cpp server, …) through the official openai-go SDK. It sends texts in batches,
// retries transient failures with the same policy as package llm (llm.RetryPolicy, honouring
// Retry-After), returns L2-normalised vectors in input order and keeps recently embedded texts
// in a bounded LRU cache so the same text is embedded once. Its errors wrap llm.ErrUnavailable,
// llm.ErrRejected and llm.ErrMalformed with the meanings documented there.
package embed

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/metrics"
)

// OpenAI embeds texts with an OpenAI-compatible embeddings endpoint. It is safe for concurrent
// use.
type OpenAI struct {
	cfg   Config
	svc   openai.EmbeddingService
	cache *cache
	dim   atomic.Int64
	retry llm.RetryPolicy
	log   zerolog.Logger
	obs   metrics.LLM
}

// NewOpenAI returns an embedding client for cfg after applying defaults. It fails when cfg is
// not Enabled or does not validate.
func NewOpenAI(cfg Config, log zerolog.Logger) (*OpenAI, error) {
	base, err := cfg.Open("embed", "embedding model", cfg.Validate)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := &OpenAI{
		cfg:   cfg,
		svc:   openai.NewEmbeddingService(cfg.ClientOptions()...),
		cache: newCache(cfg.CacheEntries),
		retry: cfg.RetryPolicy(),
	}
	o.obs = cfg.Metrics.LLM(base.Host, cfg.Model, "embed")
	o.log = log.With().Str("component", "embed").Str("provider", base.Host).Str("model", cfg.Model).Logger()
	o.retry.OnRetry = func(attempt int, wait time.Duration, err error) {
		o.log.Warn().Int("attempt", attempt).Dur("wait", wait).Err(err).Msg("embedding request failed; retrying")
	}
	return o, nil
}

// Name identifies the vectors this client makes: "openai-compatible:" + model, with "@" and
// the dimensions appended when Dimensions is set. Stored vectors are keyed by it, so changing
// the model (or its dimensions) re-embeds.
func (o *OpenAI) Name() string {
	name := "openai-compatible:" + o.cfg.Model
	if o.cfg.Dimensions > 0 {
		name += "@" + strconv.Itoa(o.cfg.Dimensions)
	}
	return name
}

// Dim returns the length of the vectors, known after the first successful request (0 before).
func (o *OpenAI) Dim() int { return int(o.dim.Load()) }

// Embed returns one L2-normalised vector per text, in the order of texts. Texts already in
// the cache are not sent again; the rest are sent once each, in requests of at most BatchSize
// texts, each retried on transient failures. A vector the model returns as all zeros stays
// zero.
//
// It fails, returning no vectors, when a text is empty (wrapping llm.ErrRejected, before any
// request), when a request fails (wrapping llm.ErrRejected, llm.ErrUnavailable and possibly
// llm.ErrMalformed, as package llm documents), when the model's vectors do not have the
// configured Dimensions or change length (llm.ErrRejected), or when ctx ends.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	start := time.Now()
	out := make([][]float32, len(texts))
	var (
		pending []string   // texts to request, each once
		keys    []cacheKey // keys[i] is pending[i]'s
		slots   [][]int    // slots[i] lists the positions in texts of pending[i]
		seen    = map[cacheKey]int{}
	)
	for i, text := range texts {
		if text == "" {
			return nil, fmt.Errorf("embed: text %d is empty: %w", i, llm.ErrRejected)
		}
		k := keyOf(o.cfg.Model, text)
		if vec, ok := o.cache.get(k); ok {
			out[i] = vec
			continue
		}
		if j, ok := seen[k]; ok {
			slots[j] = append(slots[j], i)
			continue
		}
		seen[k] = len(pending)
		pending = append(pending, text)
		keys = append(keys, k)
		slots = append(slots, []int{i})
	}

	batches := 0
	for lo := 0; lo < len(pending); lo += o.cfg.BatchSize {
		hi := min(lo+o.cfg.BatchSize, len(pending))
		vecs, err := o.embedBatch(ctx, pending[lo:hi])
		if err != nil {
			return nil, fmt.Errorf("embed: texts %d to %d of %d to embed: %w", lo, hi-1, len(pending), err)
		}
		batches++
		for j, vec := range vecs {
			o.cache.put(keys[lo+j], vec)
			for n, pos := range slots[lo+j] {
				if n > 0 {
					vec = append([]float32(nil), vec...)
				}
				out[pos] = vec
			}
		}
	}
	if len(texts) > 0 {
		o.log.Debug().Int("texts", len(texts)).Int("embedded", len(pending)).Int("requests", batches).
			Dur("latency", time.Since(start)).Msg("embedded")
	}
	return out, nil
}

// embedBatch requests the vectors of texts, retrying transient failures.
func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	params := openai.EmbeddingNewParams{
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model:          openai.EmbeddingModel(o.cfg.Model),
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}
	if o.cfg.Dimensions > 0 {
		params.Dimensions = openai.Int(int64(o.cfg.Dimensions))
	}
	var vecs [][]float32
	var tokens int
	start := time.Now()
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(llm.Scope).Start(ctx, "embeddings "+o.cfg.Model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "embeddings"), attribute.String("gen_ai.request.model", o.cfg.Model),
			attribute.Int("agentmem.texts", len(texts))))
	defer span.End()
	err := o.retry.Do(ctx, func(int) (time.Duration, bool, error) {
		ra, transient, err := llm.Attempt(ctx, o.cfg.Timeout, func(ctx context.Context, opts ...option.RequestOption) error {
			res, err := o.svc.New(ctx, params, opts...)
			if err != nil {
				return err
			}
			tokens = int(res.Usage.PromptTokens)
			vecs, err = o.vectors(res.Data, len(texts))
			return err
		})
		if err != nil {
			o.obs.AttemptFailed(llm.ErrorKind(err))
		}
		return ra, transient, err
	})
	o.obs.Call(time.Since(start), tokens, 0, err)
	if err != nil {
		span.SetAttributes(attribute.String("error.type", llm.ErrorKind(err)))
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", tokens))
	}
	return vecs, err
}

// vectors checks an answer for n texts and returns its vectors in input order, normalised.
// A bad answer wraps llm.ErrMalformed (retried); vectors of the wrong length wrap
// llm.ErrRejected (no retry can fix the configuration).
func (o *OpenAI) vectors(data []openai.Embedding, n int) ([][]float32, error) {
	if len(data) != n {
		return nil, fmt.Errorf("%w: %d embeddings for %d texts", llm.ErrMalformed, len(data), n)
	}
	out := make([][]float32, n)
	dim := len(data[0].Embedding)
	for _, d := range data {
		switch {
		case d.Index < 0 || d.Index >= int64(n) || out[d.Index] != nil:
			return nil, fmt.Errorf("%w: embedding index %d repeated or out of range for %d texts", llm.ErrMalformed, d.Index, n)
		case len(d.Embedding) == 0 || len(d.Embedding) != dim:
			return nil, fmt.Errorf("%w: embeddings of lengths %d and %d in one answer", llm.ErrMalformed, dim, len(d.Embedding))
		}
		vec, err := normalise(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("%w: embedding %d: %w", llm.ErrMalformed, d.Index, err)
		}
		out[d.Index] = vec
	}
	if o.cfg.Dimensions > 0 && dim != o.cfg.Dimensions {
		return nil, fmt.Errorf("%w: the model returned %d-dimensional vectors, Dimensions is %d", llm.ErrRejected, dim, o.cfg.Dimensions)
	}
	if !o.dim.CompareAndSwap(0, int64(dim)) && o.Dim() != dim {
		return nil, fmt.Errorf("%w: the model returned %d-dimensional vectors after %d-dimensional ones", llm.ErrRejected, dim, o.Dim())
	}
	return out, nil
}

// normalise returns v scaled to unit L2 norm as float32 (a zero vector stays zero). It fails on
// a value that is not finite.
func normalise(v []float64) ([]float32, error) {
	var peak float64
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("value %v is not finite", x)
		}
		peak = max(peak, math.Abs(x))
	}
	out := make([]float32, len(v))
	if peak == 0 {
		return out, nil
	}
	// Scale by the largest magnitude first so the sum of squares cannot overflow.
	var sum float64
	for _, x := range v {
		sum += (x / peak) * (x / peak)
	}
	norm := peak * math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out, nil
}
