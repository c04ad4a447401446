// Package llm calls chat models over the OpenAI-compatible chat completions API (OpenAI, GLM,
// DeepSeek, Ollama, vLLM, the llama.cpp server, …) with the official openai-go SDK.
//
// A Client bounds the calls it has in flight, gives every attempt its own timeout and retries
// transient failures (429, 408, 409, 5xx, timeouts, connection errors, malformed bodies) with
// exponential backoff and full jitter, honouring Retry-After. Errors wrap ErrUnavailable
// (transient failures outlasted every attempt), ErrRejected (permanent: bad key, unknown model,
// context too long) or ErrMalformed (the server answered but not with a completion), so callers
// can tell a retry-later from a never.
//
// Endpoint (the configuration of an endpoint: URL, key, model, timeout, retries), RetryPolicy
// and Attempt are shared with package embed, which calls the embeddings endpoint of the same
// kind of server.
package llm

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Scope is the instrumentation scope of the LLM and embedding spans.
const Scope = "github.com/agentmem/agentmem/internal/llm"

// Client is a chat completion client for one model of one OpenAI-compatible server. It is
// safe for concurrent use.
type Client struct {
	cfg   Config
	base  *url.URL
	chat  openai.ChatCompletionService
	sem   chan struct{}
	retry RetryPolicy
	log   zerolog.Logger
	obs   metrics.LLM
}

// New returns a Client for cfg after applying defaults. It fails when cfg is not Enabled or
// does not validate.
func New(cfg Config, log zerolog.Logger) (*Client, error) {
	base, err := cfg.Open("llm", "LLM", cfg.Validate)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Client{
		cfg:  cfg,
		base: base,
		chat: openai.NewChatCompletionService(cfg.ClientOptions()...),
		sem:  make(chan struct{}, cfg.MaxConcurrency),
		log:  log.With().Str("component", "llm").Str("provider", base.Host).Str("model", cfg.Model).Logger(),
	}
	c.retry = cfg.RetryPolicy()
	c.obs = cfg.Metrics.LLM(base.Host, cfg.Model, "complete")
	return c, nil
}

// Model returns the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// Provider returns the host (and port) of the base URL, e.g. "api.openai.com" or
// "localhost:11434".
func (c *Client) Provider() string { return c.base.Host }

// Complete sends one chat completion and returns the first choice's answer. It waits for a
// free slot (at most MaxConcurrency calls are in flight) and retries transient failures.
//
// The error wraps ErrRejected for a request the server refuses (or that has no messages, an
// unknown role, or is answered only with a refusal), ErrUnavailable when every attempt failed
// transiently (and also ErrMalformed when the last attempt's body was not a completion), or
// ctx.Err() when ctx ends first.
func (c *Client) Complete(ctx context.Context, req Request) (_ Response, err error) {
	// A child span of the caller's, when the caller records one (GenAI semantic conventions).
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(Scope).Start(ctx, "chat "+c.cfg.Model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", c.base.Host),
			attribute.String("gen_ai.request.model", c.cfg.Model), attribute.String("agentmem.purpose", purpose(req))))
	defer func() {
		if err != nil {
			span.SetAttributes(attribute.String("error.type", ErrorKind(err)))
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	params, err := c.params(req)
	if err != nil {
		return Response{}, fmt.Errorf("llm: %s: %w", purpose(req), err)
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return Response{}, fmt.Errorf("llm: %s: waiting for a free slot: %w", purpose(req), ctx.Err())
	}
	defer func() { <-c.sem }()

	start := time.Now()
	var (
		out      *openai.ChatCompletion
		attempts int
	)
	policy := c.retry
	policy.OnRetry = func(attempt int, wait time.Duration, err error) {
		c.log.Warn().Str("purpose", purpose(req)).Int("attempt", attempt).
			Dur("wait", wait).Err(err).Msg("chat completion failed; retrying")
	}
	err = policy.Do(ctx, func(attempt int) (time.Duration, bool, error) {
		attempts = attempt
		return c.observe(Attempt(ctx, c.cfg.Timeout, func(ctx context.Context, opts ...option.RequestOption) error {
			res, err := c.chat.New(ctx, params, opts...)
			if err != nil {
				return err
			}
			if len(res.Choices) == 0 {
				return fmt.Errorf("%w: no choices", ErrMalformed)
			}
			if m := res.Choices[0].Message; m.Content == "" && m.Refusal != "" {
				return fmt.Errorf("%w: the model refused to answer", ErrRejected)
			}
			out = res
			return nil
		}))
	})
	if err != nil {
		c.obs.Call(time.Since(start), 0, 0, err)
		return Response{}, fmt.Errorf("llm: %s with %s: %w", purpose(req), c.cfg.Model, err)
	}

	resp := Response{
		Content:  out.Choices[0].Message.Content,
		Model:    out.Model,
		Attempts: attempts,
	}
	if resp.Model == "" {
		resp.Model = c.cfg.Model
	}
	resp.Usage, resp.Estimated = usage(out.Usage, req.Messages, resp.Content)
	c.obs.Call(time.Since(start), resp.Usage.InputTokens, resp.Usage.OutputTokens, nil)
	span.SetAttributes(attribute.String("gen_ai.response.model", resp.Model), attribute.Int("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
		attribute.Int("gen_ai.usage.output_tokens", resp.Usage.OutputTokens), attribute.Int("agentmem.attempts", attempts))
	c.log.Debug().Str("purpose", purpose(req)).Str("answered_by", resp.Model).Int("attempts", attempts).
		Int("input_tokens", resp.Usage.InputTokens).Int("output_tokens", resp.Usage.OutputTokens).
		Bool("estimated", resp.Estimated).Dur("latency", time.Since(start)).Msg("chat completion")
	return resp, nil
}

// observe counts a failed attempt in the metrics and passes the attempt's result on.
func (c *Client) observe(retryAfter time.Duration, transient bool, err error) (time.Duration, bool, error) {
	if err != nil {
		c.obs.AttemptFailed(ErrorKind(err))
	}
	return retryAfter, transient, err
}

// params translates req into the SDK's request body.
func (c *Client) params(req Request) (openai.ChatCompletionNewParams, error) {
	if len(req.Messages) == 0 {
		return openai.ChatCompletionNewParams{}, fmt.Errorf("%w: no messages", ErrRejected)
	}
	p := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(c.cfg.Model),
		Messages: make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)),
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system":
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case "user":
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case "assistant":
			p.Messages = append(p.Messages, openai.AssistantMessage(m.Content))
		default:
			return p, fmt.Errorf("%w: message %d has role %q (want system, user or assistant)", ErrRejected, i, m.Role)
		}
	}
	if req.MaxTokens > 0 {
		// max_tokens rather than max_completion_tokens: every OpenAI-compatible server knows it.
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	temperature := c.cfg.Temperature
	if req.Temperature != nil {
		temperature = *req.Temperature
	}
	if temperature >= 0 {
		p.Temperature = openai.Float(temperature)
	}
	if req.JSON {
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
		}
	}
	return p, nil
}

// usage is the call's usage as the server reported it; a count the server left at zero for a
// non-empty text is estimated with memory.Estimate instead, and estimated is then true.
func usage(u openai.CompletionUsage, in []Message, out string) (_ memory.Usage, estimated bool) {
	got := memory.Usage{Calls: 1, InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens)}
	if got.InputTokens <= 0 {
		got.InputTokens = 0
		for _, m := range in {
			got.InputTokens += memory.Estimate(m.Content)
		}
		estimated = got.InputTokens > 0
	}
	if got.OutputTokens <= 0 && out != "" {
		got.OutputTokens = memory.Estimate(out)
		estimated = true
	}
	return got, estimated
}

// purpose labels a request in logs and errors.
func purpose(req Request) string {
	if req.Purpose == "" {
		return "completion"
	}
	return req.Purpose
}
