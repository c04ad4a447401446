package langchaingo

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// HistoryOptions configures a ChatHistory. The zero value is ready to use.
type HistoryOptions struct {
	// ContextQuery, when set, makes Messages start with a system message carrying agentmem's
	// long-term context for this query (the user's profile, facts and summaries of earlier
	// sessions), so that a new session starts with what agentmem remembers.
	ContextQuery string
	// ContextTokens bounds that context (0: agentmem's default of 2,000).
	ContextTokens int
	// Wait is how long Messages waits for the messages added last to be applied before it asks
	// for the context (5s; negative: it does not wait).
	Wait time.Duration
}

// ChatHistory is a langchaingo schema.ChatMessageHistory backed by agentmem: every message added
// is published at once as a turn of the session. Messages returns the messages added through
// this value (after the context message, with ContextQuery); agentmem itself keeps every turn,
// serves them by relevance and compresses the old ones. It is safe for concurrent use.
type ChatHistory struct {
	c             *client.Client
	session, user string
	opts          HistoryOptions
	last          lastTurn

	mu       sync.Mutex
	messages []llms.ChatMessage
}

var _ schema.ChatMessageHistory = (*ChatHistory)(nil)

// NewChatHistory returns the chat history of session, a conversation of user, kept by agentmem
// through c. It fails when session or user is not a valid token ([A-Za-z0-9_-]{1,64}).
func NewChatHistory(c *client.Client, session, user string, opts HistoryOptions) (*ChatHistory, error) {
	if err := validate(session, user); err != nil {
		return nil, err
	}
	if opts.Wait == 0 {
		opts.Wait = 5 * time.Second
	}
	return &ChatHistory{c: c, session: session, user: user, opts: opts}, nil
}

// AddMessage publishes message as a turn: a human message as role user, an AI message as
// assistant, a system message as system, a tool or function message as tool (a function's name
// as the tool), a generic message by its Role. A message without text (an AI message that only
// calls tools) is kept but not published. It fails, publishing nothing, for another kind of
// message or a role agentmem does not know, and when agentmem does not store the turn.
func (h *ChatHistory) AddMessage(ctx context.Context, message llms.ChatMessage) error {
	t := client.Turn{Session: h.session, User: h.user, Content: message.GetContent()}
	switch m := message.(type) {
	case llms.FunctionChatMessage:
		t.Role, t.Tool = events.RoleTool, m.Name
	case llms.GenericChatMessage:
		t.Role = m.Role
	default:
		t.Role = roles[message.GetType()]
	}
	if t.Role == "" {
		return fmt.Errorf("%w: a %s message has no agentmem role", ErrInput, message.GetType())
	}
	if strings.TrimSpace(t.Content) != "" {
		ack, err := h.c.Publish(ctx, t)
		if err != nil {
			return err
		}
		h.last.set(ack.ID)
	}
	h.mu.Lock()
	h.messages = append(h.messages, message)
	h.mu.Unlock()
	return nil
}

var roles = map[llms.ChatMessageType]string{
	llms.ChatMessageTypeHuman:  events.RoleUser,
	llms.ChatMessageTypeAI:     events.RoleAssistant,
	llms.ChatMessageTypeSystem: events.RoleSystem,
	llms.ChatMessageTypeTool:   events.RoleTool,
}

// AddUserMessage publishes a user turn.
func (h *ChatHistory) AddUserMessage(ctx context.Context, message string) error {
	return h.AddMessage(ctx, llms.HumanChatMessage{Content: message})
}

// AddAIMessage publishes an assistant turn.
func (h *ChatHistory) AddAIMessage(ctx context.Context, message string) error {
	return h.AddMessage(ctx, llms.AIChatMessage{Content: message})
}

// Messages returns the messages added through this history (or set by SetMessages), oldest
// first; with ContextQuery, after a system message carrying what agentmem remembers for it
// (none when it remembers nothing). It fails when agentmem does not answer.
func (h *ChatHistory) Messages(ctx context.Context) ([]llms.ChatMessage, error) {
	var out []llms.ChatMessage
	if h.opts.ContextQuery != "" {
		req := events.RetrieveRequest{Query: h.opts.ContextQuery, Session: h.session, User: h.user, Sources: []string{events.SourceLong}}
		if h.opts.ContextTokens > 0 {
			req.ContextTokens = &h.opts.ContextTokens
		}
		reply, err := retrieve(ctx, h.c, req, &h.last, h.opts.Wait)
		if err != nil {
			return nil, err
		}
		if reply.Context != "" {
			out = append(out, llms.SystemChatMessage{Content: reply.Context})
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(out, h.messages...), nil
}

// SetMessages replaces the messages Messages returns, as langchaingo's window and token buffer
// memories do to trim the prompt. It publishes and deletes nothing: agentmem keeps every turn
// it was given (and compresses old ones itself).
func (h *ChatHistory) SetMessages(_ context.Context, messages []llms.ChatMessage) error {
	h.mu.Lock()
	h.messages = append([]llms.ChatMessage(nil), messages...)
	h.mu.Unlock()
	return nil
}

// Clear ends the session (agentmem extracts its facts, which the user's later sessions get
// back) and empties the messages. It deletes nothing in agentmem; a message added after it
// reopens the session. It fails when agentmem does not store the end.
func (h *ChatHistory) Clear(ctx context.Context) error {
	ack, err := h.c.EndSession(ctx, h.session, h.user)
	if err != nil {
		return err
	}
	h.last.set(ack.ID)
	h.mu.Lock()
	h.messages = nil
	h.mu.Unlock()
	return nil
}
