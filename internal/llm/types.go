package llm

import "github.com/agentmem/agentmem/pkg/memory"

// Message is one chat message.
type Message struct {
	Role    string // "system", "user" or "assistant"
	Content string
}

// Request is one chat completion.
type Request struct {
	Messages []Message
	// MaxTokens bounds the answer (0: the server's default).
	MaxTokens int
	// JSON asks for a JSON object answer (response_format json_object) where the server supports it.
	JSON bool
	// Temperature overrides the configured temperature when not nil (a negative value sends
	// none, leaving the server's default).
	Temperature *float64
	// Purpose labels the call in logs and usage ("map", "reduce", "extract", …).
	Purpose string
}

// Response is a completed chat call.
type Response struct {
	Content string
	// Usage of this call: Calls is 1, tokens as the server reported them, or estimated with the
	// design's estimate when it reported none (Estimated is then true).
	Usage     memory.Usage
	Estimated bool
	// Model is the model that answered.
	Model string
	// Attempts is how many HTTP attempts the call took (1 without retries).
	Attempts int
}
