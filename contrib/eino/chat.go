// Package eino shows agentmem in a CloudWeGo Eino (github.com/cloudwego/eino) chat flow, in its
// own module so that agentmem's main module does not depend on Eino. [NewChat] compiles a chain
// that, for each question of a session, asks agentmem for the context to put into the prompt
// (the user's profile, relevant facts, summaries and turns), publishes the question and the
// model's answer as turns as they happen, and calls the chat model with a prompt that carries
// the context. [Memory] holds the two steps, for flows built by hand.
package eino

import (
	"context"
	"sync"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/prompt"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// SystemPrompt is the system message NewChat's template starts with; {memory} is agentmem's
// context for the question.
const SystemPrompt = "You are a helpful assistant. What you remember about the user and this conversation:\n{memory}"

// Memory is agentmem's memory of one session of one user, for an Eino flow. It is safe for
// concurrent use.
type Memory struct {
	c             *client.Client
	session, user string
	// Wait is how long Recall waits for the turns published last to be applied (5s).
	Wait time.Duration

	mu   sync.Mutex
	last string
}

// NewMemory returns the memory of session, a conversation of user, kept by agentmem through c.
// It fails when session or user is not a valid token ([A-Za-z0-9_-]{1,64}).
func NewMemory(c *client.Client, session, user string) (*Memory, error) {
	if err := events.ValidateToken("session", session); err != nil {
		return nil, err
	}
	if err := events.ValidateToken("user", user); err != nil {
		return nil, err
	}
	return &Memory{c: c, session: session, user: user, Wait: 5 * time.Second}, nil
}

// Recall returns the template variables for question: "question", and "memory", the context
// agentmem builds for it (after the turns published last are applied). It then publishes the
// question as the user's turn. It fails when agentmem does not answer or store the turn.
func (m *Memory) Recall(ctx context.Context, question string) (map[string]any, error) {
	req := events.RetrieveRequest{Query: question, Session: m.session, User: m.user}
	if last := m.lastID(); last != "" && m.Wait > 0 {
		req.After, req.WaitMS = last, int(m.Wait/time.Millisecond)
	}
	reply, err := m.c.Retrieve(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := m.publish(ctx, events.RoleUser, question); err != nil {
		return nil, err
	}
	return map[string]any{"memory": reply.Context, "question": question}, nil
}

// Record publishes the model's answer as the assistant's turn and returns it. It fails when
// agentmem does not store the turn.
func (m *Memory) Record(ctx context.Context, answer *schema.Message) (*schema.Message, error) {
	if answer.Content == "" {
		return answer, nil
	}
	return answer, m.publish(ctx, events.RoleAssistant, answer.Content)
}

// End ends the session: agentmem extracts its facts, which the user's later sessions get back.
func (m *Memory) End(ctx context.Context) error {
	ack, err := m.c.EndSession(ctx, m.session, m.user)
	if err == nil {
		m.setLast(ack.ID)
	}
	return err
}

func (m *Memory) publish(ctx context.Context, role, content string) error {
	ack, err := m.c.Publish(ctx, client.Turn{Session: m.session, User: m.user, Role: role, Content: content})
	if err == nil {
		m.setLast(ack.ID)
	}
	return err
}

func (m *Memory) lastID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

func (m *Memory) setLast(id string) {
	m.mu.Lock()
	m.last = id
	m.mu.Unlock()
}

// NewChat compiles the chain question → Recall → chat template (SystemPrompt, then the
// question) → chat model → Record → answer. It fails when Eino cannot compile it.
func NewChat(ctx context.Context, m *Memory, cm model.BaseChatModel) (compose.Runnable[string, *schema.Message], error) {
	tpl := prompt.FromMessages(schema.FString, schema.SystemMessage(SystemPrompt), schema.UserMessage("{question}"))
	return compose.NewChain[string, *schema.Message]().
		AppendLambda(compose.InvokableLambda(m.Recall)).
		AppendChatTemplate(tpl).
		AppendChatModel(cm).
		AppendLambda(compose.InvokableLambda(m.Record)).
		Compile(ctx)
}
