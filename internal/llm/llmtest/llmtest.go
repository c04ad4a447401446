// Package llmtest is an in-process OpenAI-compatible HTTP server for tests. It answers
// POST {base}/chat/completions and POST {base}/embeddings through a handler the test scripts,
// records every request it receives (arrival time, headers, body) and writes response bodies
// shaped exactly like OpenAI's.
package llmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// BasePath is the path prefix of the server's API, as in https://api.openai.com/v1.
const BasePath = "/v1"

// Handler answers the nth request (1 for the first) the server received.
type Handler func(w http.ResponseWriter, r *http.Request, n int)

// Request is one request the server received.
type Request struct {
	// N is the order of arrival, from 1.
	N int
	// At is when the request arrived.
	At time.Time
	// Method and Path are the request's (Path includes BasePath).
	Method, Path string
	// Header holds the request headers, Authorization included.
	Header http.Header
	// Body is the raw request body.
	Body []byte
}

// Server is an OpenAI-compatible test server. It is safe for concurrent use.
type Server struct {
	// URL is the API base URL to configure clients with (it ends in BasePath).
	URL string

	srv  *httptest.Server
	mu   sync.Mutex
	reqs []Request
}

// NewServer starts a server that records each request and passes it to h with its arrival
// number. It is closed when the test ends (after its in-flight requests finish).
func NewServer(t testing.TB, h Handler) *Server {
	t.Helper()
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		n := len(s.reqs) + 1
		s.reqs = append(s.reqs, Request{N: n, At: at, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		h(w, r, n)
	}))
	s.URL = s.srv.URL + BasePath
	t.Cleanup(s.srv.Close)
	return s
}

// Requests returns a copy of the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count returns how many requests the server has received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// ChatMessage is one message of a ChatRequest.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is the body of POST /chat/completions as a client sent it.
type ChatRequest struct {
	Model          string        `json:"model"`
	Messages       []ChatMessage `json:"messages"`
	MaxTokens      *int          `json:"max_tokens"`
	Temperature    *float64      `json:"temperature"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

// EmbeddingsRequest is the body of POST /embeddings as a client sent it (input as a list).
type EmbeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions"`
	EncodingFormat string   `json:"encoding_format"`
}

// DecodeChat decodes a chat completion request body.
func DecodeChat(body []byte) (ChatRequest, error) {
	var req ChatRequest
	err := json.Unmarshal(body, &req)
	return req, err
}

// DecodeEmbeddings decodes an embeddings request body.
func DecodeEmbeddings(body []byte) (EmbeddingsRequest, error) {
	var req EmbeddingsRequest
	err := json.Unmarshal(body, &req)
	return req, err
}

// WriteJSON writes v as a JSON body with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteCompletion answers a chat completion with one choice holding content. The usage object
// is left out when both token counts are 0, as some servers do.
func WriteCompletion(w http.ResponseWriter, model, content string, promptTokens, completionTokens int) {
	body := map[string]any{
		"id":      "chatcmpl-test",
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content, "refusal": nil},
			"logprobs":      nil,
			"finish_reason": "stop",
		}},
	}
	if promptTokens != 0 || completionTokens != 0 {
		body["usage"] = map[string]any{
			"prompt_tokens":     promptTokens,
			"completion_tokens": completionTokens,
			"total_tokens":      promptTokens + completionTokens,
		}
	}
	WriteJSON(w, http.StatusOK, body)
}

// Embedding is one vector of an embeddings answer and the index of the input it embeds.
type Embedding struct {
	Index  int
	Vector []float64
}

// WriteEmbeddings answers an embeddings request with data in the order given.
func WriteEmbeddings(w http.ResponseWriter, model string, data []Embedding, promptTokens int) {
	list := make([]any, len(data))
	for i, d := range data {
		list[i] = map[string]any{"object": "embedding", "index": d.Index, "embedding": d.Vector}
	}
	WriteJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   list,
		"model":  model,
		"usage":  map[string]any{"prompt_tokens": promptTokens, "total_tokens": promptTokens},
	})
}

// WriteError answers with an OpenAI error object and the given status.
func WriteError(w http.ResponseWriter, status int, typ, code, message string) {
	WriteJSON(w, status, map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": code,
	}})
}

// Answer returns a Handler that answers every chat completion with answer(request) and
// reports the prompt and answer lengths in words as usage; other paths get 404.
func Answer(answer func(ChatRequest) string) Handler {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			WriteError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "no such endpoint")
			return
		}
		body, _ := io.ReadAll(r.Body)
		req, err := DecodeChat(body)
		if err != nil {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", err.Error())
			return
		}
		content := answer(req)
		var in int
		for _, m := range req.Messages {
			in += len(strings.Fields(m.Content))
		}
		WriteCompletion(w, req.Model, content, max(in, 1), max(len(strings.Fields(content)), 1))
	}
}
