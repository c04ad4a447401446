package langchaingo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// ErrInput is wrapped by the errors of SaveContext and LoadMemoryVariables when the chain's
// input or output values are not what the memory can use (which key to take is ambiguous, or
// the value is not a string).
var ErrInput = errors.New("langchaingo: invalid input values")

// Options configures a Memory. The zero value is ready to use.
type Options struct {
	// MemoryKey is the variable LoadMemoryVariables returns the context under ("history", as
	// chains.NewConversation's prompt expects).
	MemoryKey string
	// InputKey names the input that is the user's turn and the query; empty: the only input
	// that is not a memory variable.
	InputKey string
	// OutputKey names the output that is the assistant's turn; empty: the only output, else
	// "text", "output", "response" or "answer".
	OutputKey string
	// ProfileKey, when set, makes LoadMemoryVariables also return, under this key, the contents
	// of the user's live facts that agentmem found for the input ([]string): the relevant ones
	// first, then the rest of the profile it puts into the context.
	ProfileKey string
	// ReturnMessages makes the memory variable a []llms.ChatMessage (one system message with
	// the context, none when it is empty) for chat prompt templates, instead of a string.
	ReturnMessages bool
	// ContextTokens bounds the context (0: agentmem's default of 2,000).
	ContextTokens int
	// Wait is how long LoadMemoryVariables waits for the turns saved last to be applied, so that
	// the next prompt sees them (read your writes; 5s; negative: it does not wait).
	Wait time.Duration
}

// Memory is a langchaingo schema.Memory backed by agentmem for one session of one user. It is
// safe for concurrent use.
type Memory struct {
	c             *client.Client
	session, user string
	opts          Options
	last          lastTurn
}

var _ schema.Memory = (*Memory)(nil)

// NewMemory returns the memory of session, a conversation of user, kept by agentmem through c.
// It fails when session or user is not a valid token ([A-Za-z0-9_-]{1,64}).
func NewMemory(c *client.Client, session, user string, opts Options) (*Memory, error) {
	if err := validate(session, user); err != nil {
		return nil, err
	}
	if opts.MemoryKey == "" {
		opts.MemoryKey = "history"
	}
	if opts.Wait == 0 {
		opts.Wait = 5 * time.Second
	}
	return &Memory{c: c, session: session, user: user, opts: opts}, nil
}

func validate(session, user string) error {
	if err := events.ValidateToken("session", session); err != nil {
		return err
	}
	return events.ValidateToken("user", user)
}

// GetMemoryKey returns the key of the context variable.
func (m *Memory) GetMemoryKey(context.Context) string { return m.opts.MemoryKey }

// MemoryVariables returns the keys LoadMemoryVariables returns.
func (m *Memory) MemoryVariables(context.Context) []string {
	if m.opts.ProfileKey != "" {
		return []string{m.opts.MemoryKey, m.opts.ProfileKey}
	}
	return []string{m.opts.MemoryKey}
}

// LoadMemoryVariables returns the context agentmem builds for the chain's input (empty when it
// remembers nothing relevant, or there is no input to ask about), after waiting for the turns
// saved last to be applied. It fails when agentmem does not answer or refuses the request (a
// *client.ServiceError), or when the input is ambiguous (ErrInput).
func (m *Memory) LoadMemoryVariables(ctx context.Context, inputs map[string]any) (map[string]any, error) {
	query, err := inputValue(inputs, m.opts.InputKey, m.MemoryVariables(ctx), false)
	if err != nil {
		return nil, err
	}
	var text string
	var profile []string
	if query != "" {
		reply, err := retrieve(ctx, m.c, m.req(query), &m.last, m.opts.Wait)
		if err != nil {
			return nil, err
		}
		text = reply.Context
		for _, e := range append(reply.Entries, reply.Profile...) {
			if e.Type == string(memory.Fact) && e.Source == events.SourceLong {
				profile = append(profile, e.Content)
			}
		}
	}
	out := map[string]any{m.opts.MemoryKey: text}
	if m.opts.ReturnMessages {
		msgs := []llms.ChatMessage{}
		if text != "" {
			msgs = append(msgs, llms.SystemChatMessage{Content: text})
		}
		out[m.opts.MemoryKey] = msgs
	}
	if m.opts.ProfileKey != "" {
		out[m.opts.ProfileKey] = profile
	}
	return out, nil
}

func (m *Memory) req(query string) events.RetrieveRequest {
	req := events.RetrieveRequest{Query: query, Session: m.session, User: m.user}
	if m.opts.ContextTokens > 0 {
		req.ContextTokens = &m.opts.ContextTokens
	}
	return req
}

// SaveContext publishes the chain's input as a user turn and its output as an assistant turn
// of the session, in one batch (an empty one is left out). It fails when the values are ambiguous
// (ErrInput), a turn is invalid, or agentmem does not store it.
func (m *Memory) SaveContext(ctx context.Context, inputs, outputs map[string]any) error {
	in, err := inputValue(inputs, m.opts.InputKey, m.MemoryVariables(ctx), true)
	if err != nil {
		return err
	}
	out, err := outputValue(outputs, m.opts.OutputKey)
	if err != nil {
		return err
	}
	var turns []client.Turn
	for _, t := range []client.Turn{
		{Session: m.session, User: m.user, Role: events.RoleUser, Content: in},
		{Session: m.session, User: m.user, Role: events.RoleAssistant, Content: out},
	} {
		if strings.TrimSpace(t.Content) != "" {
			turns = append(turns, t)
		}
	}
	if len(turns) == 0 {
		return nil
	}
	acks, err := m.c.PublishBatch(ctx, turns)
	if err != nil {
		return err
	}
	m.last.set(acks[len(acks)-1].ID)
	return nil
}

// Clear ends the session: agentmem extracts its facts, which the user's later sessions get back
// (see WaitForFact). It deletes nothing; a turn saved after it reopens the session. It fails
// when agentmem does not store the end.
func (m *Memory) Clear(ctx context.Context) error {
	ack, err := m.c.EndSession(ctx, m.session, m.user)
	if err != nil {
		return err
	}
	m.last.set(ack.ID)
	return nil
}

// lastTurn is the id of the event a memory published last, for read-your-writes.
type lastTurn struct {
	mu sync.Mutex
	id string
}

func (l *lastTurn) set(id string) {
	l.mu.Lock()
	l.id = id
	l.mu.Unlock()
}

func (l *lastTurn) get() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id
}

// retrieve asks agentmem, waiting up to wait for the event last to be applied.
func retrieve(ctx context.Context, c *client.Client, req events.RetrieveRequest, last *lastTurn, wait time.Duration) (events.RetrieveReply, error) {
	if id := last.get(); id != "" && wait > 0 {
		req.After, req.WaitMS = id, int(wait/time.Millisecond)
	}
	return c.Retrieve(ctx, req)
}

// inputValue returns the value under key, else the only value whose key is not a memory
// variable (nor "stop"). Without required, no such value is "".
func inputValue(values map[string]any, key string, memoryKeys []string, required bool) (string, error) {
	if key != "" {
		v, ok := values[key]
		if !ok {
			if !required {
				return "", nil
			}
			return "", fmt.Errorf("%w: no input %q", ErrInput, key)
		}
		return text(key, v)
	}
	var found []string
	for k := range values {
		if k != "stop" && !slices.Contains(memoryKeys, k) {
			found = append(found, k)
		}
	}
	switch {
	case len(found) == 1:
		return text(found[0], values[found[0]])
	case len(found) == 0 && !required:
		return "", nil
	}
	return "", fmt.Errorf("%w: %d inputs %q, set Options.InputKey", ErrInput, len(found), found)
}

// outputValue returns the value under key, else the only output, else the first of the usual
// output keys.
func outputValue(values map[string]any, key string) (string, error) {
	if key != "" {
		v, ok := values[key]
		if !ok {
			return "", fmt.Errorf("%w: no output %q", ErrInput, key)
		}
		return text(key, v)
	}
	if len(values) == 1 {
		for k, v := range values {
			return text(k, v)
		}
	}
	for _, k := range []string{"text", "output", "response", "answer"} {
		if v, ok := values[k]; ok {
			return text(k, v)
		}
	}
	return "", fmt.Errorf("%w: %d outputs, set Options.OutputKey", ErrInput, len(values))
}

func text(key string, v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case fmt.Stringer:
		return v.String(), nil
	}
	return "", fmt.Errorf("%w: %q is a %T, not a string", ErrInput, key, v)
}
