package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Errors of calls to an OpenAI-compatible endpoint (chat here, embeddings in package embed).
var (
	// ErrUnavailable is wrapped by the error of a call whose every attempt failed transiently
	// (429, 408, 409, 5xx, timeouts, connection errors, malformed bodies). Retrying later may
	// succeed.
	ErrUnavailable = errors.New("llm: unavailable")
	// ErrRejected is wrapped by the error of a call the server refused permanently (a 4xx other
	// than 408, 409 and 429: bad key, unknown model, context too long, …) or that cannot be sent
	// at all. Retrying the same call will fail again; it is attempted once.
	ErrRejected = errors.New("llm: request rejected")
	// ErrMalformed is wrapped by the error of an attempt that got a 2xx response whose body is
	// not a valid answer (not JSON, no choices, wrong number of embeddings). Such attempts are
	// retried like transient failures, so the error of a call whose attempts all ended this way
	// wraps both ErrUnavailable and ErrMalformed.
	ErrMalformed = errors.New("llm: malformed response")
)

// ParseBaseURL parses the base URL of an OpenAI-compatible API ("https://api.openai.com/v1",
// "http://localhost:11434/v1"). It fails unless the URL is absolute with an http or https
// scheme and a host.
func ParseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("base URL %q: scheme must be http or https", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("base URL %q has no host", u.Redacted())
	}
	return u, nil
}

// RedactURL returns raw with any password in its user info replaced by "xxxxx", or
// "<invalid URL>" when it does not parse.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid URL>"
	}
	return u.Redacted()
}

// MaskSecret returns what a config's String shows for a secret: `""` when it is empty and
// "****" otherwise, never any part of it.
func MaskSecret(secret string) string {
	if secret == "" {
		return `""`
	}
	return "****"
}

// ClientOptions returns the openai-go options for the endpoint: its base URL, the API key
// (sent as a bearer token; none when empty, as for Ollama), the SDK's own retries disabled
// (RetryPolicy retries instead) and an HTTP client of its own. Services built from these
// options alone (openai.NewChatCompletionService, openai.NewEmbeddingService) never read the
// OPENAI_* environment variables the way openai.NewClient does.
func (e Endpoint) ClientOptions() []option.RequestOption {
	transport := http.DefaultTransport
	if t, ok := transport.(*http.Transport); ok {
		t = t.Clone()
		t.MaxIdleConnsPerHost = 16 // keep a connection per call in flight, not the default 2
		transport = t
	}
	opts := []option.RequestOption{
		option.WithBaseURL(e.BaseURL),
		option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: transport}),
	}
	if e.APIKey != "" {
		opts = append(opts, option.WithAPIKey(e.APIKey))
	}
	return opts
}

// Attempt makes one attempt of a call to an OpenAI-compatible endpoint for RetryPolicy.Do: it
// runs call under a timeout of its own (unless timeout is 0), with opts that capture the HTTP
// response, and classifies the failure. call returns the SDK's error, or an error wrapping
// ErrMalformed for a decoded body that is not a valid answer (retried), or ErrRejected for
// one that can never be (not retried).
//
// The returned error wraps ErrRejected for a permanent refusal, ErrMalformed for a 2xx with a
// bad body, and describes timeouts and connection errors; when ctx itself ends it wraps
// ctx.Err() and is not transient. retryAfter is the server's Retry-After (or retry-after-ms).
func Attempt(ctx context.Context, timeout time.Duration, call func(ctx context.Context, opts ...option.RequestOption) error) (retryAfter time.Duration, transient bool, err error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	var resp *http.Response
	err = call(actx, option.WithResponseInto(&resp))
	if err == nil {
		return 0, false, nil
	}
	return classify(ctx, actx, resp, err)
}

// classify sorts a failed attempt: ctx is the caller's context, actx the attempt's, resp the
// HTTP response if one arrived.
func classify(ctx, actx context.Context, resp *http.Response, err error) (time.Duration, bool, error) {
	var netErr net.Error
	switch {
	case ctx.Err() != nil:
		return 0, false, kinded("canceled", fmt.Errorf("%w: %w", ctx.Err(), err))
	case errors.Is(err, ErrRejected):
		return 0, false, kinded("rejected", err)
	case errors.Is(err, ErrMalformed):
		return 0, true, kinded("malformed", err)
	case actx.Err() != nil:
		// The attempt's own deadline: not the caller's, so not wrapped as a context error.
		return 0, true, kinded("timeout", fmt.Errorf("attempt timed out: %v", err))
	}
	if resp != nil {
		code := resp.StatusCode
		switch {
		case code >= 200 && code < 300:
			return 0, true, kinded("malformed", fmt.Errorf("%w: %v", ErrMalformed, err))
		case code == http.StatusTooManyRequests:
			return retryAfter(resp.Header, time.Now()), true, kinded("rate_limited", describeStatus(code, err))
		case code == http.StatusRequestTimeout:
			return retryAfter(resp.Header, time.Now()), true, kinded("timeout", describeStatus(code, err))
		case code == http.StatusConflict || code >= 500:
			return retryAfter(resp.Header, time.Now()), true, kinded("server", describeStatus(code, err))
		case code >= 400:
			return 0, false, kinded("rejected", fmt.Errorf("%w: %w", ErrRejected, describeStatus(code, err)))
		}
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) || errors.As(err, &netErr) {
		return 0, true, kinded("connection", fmt.Errorf("connection: %w", err))
	}
	// Neither an HTTP answer nor a transport failure: the request could not be built or
	// sent as configured, which no retry fixes.
	return 0, false, kinded("rejected", fmt.Errorf("%w: %w", ErrRejected, err))
}

// kindError carries the kind of a failed attempt (ErrorKind) without changing its message.
type kindError struct {
	kind string
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

func kinded(kind string, err error) error { return &kindError{kind: kind, err: err} }

// ErrorKind sorts an error of Complete, Attempt or package embed into a short label for the
// metrics: "rate_limited" (429), "server" (5xx, 409), "timeout" (the attempt's deadline, 408),
// "connection", "malformed" (an answer that was not a completion), "rejected" (a permanent
// refusal), "canceled" (the caller's context), or "other".
func ErrorKind(err error) string {
	var k *kindError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &k):
		return k.kind
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, ErrRejected):
		return "rejected"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	}
	return "other"
}

// describeStatus describes a failed HTTP answer: the SDK's *openai.Error (whose message is the
// status line) with the provider's error type, code and parameter, enumerations such as
// "invalid_request_error" and "context_length_exceeded" (never its free-text message, which may
// quote the request), or the status code and err when the body held no OpenAI error object.
func describeStatus(code int, err error) error {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("status %d: %w", code, err)
	}
	var desc string
	for _, kv := range [][2]string{{"type", apiErr.Type}, {"code", apiErr.Code}, {"param", apiErr.Param}} {
		if kv[1] != "" {
			desc += fmt.Sprintf(" %s=%q", kv[0], kv[1])
		}
	}
	if desc == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, desc[1:])
}
