package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// Tool names.
const (
	ToolRemember   = "remember"
	ToolRecall     = "recall"
	ToolGetContext = "get_context"
	ToolListFacts  = "list_facts"
	ToolGraph      = "list_entities"
	ToolForgetUser = "forget_user"
	ToolEndSession = "end_session"
)

// RememberInput is the input of remember.
type RememberInput struct {
	Content string `json:"content" jsonschema:"what to remember: the text of one conversation turn, in any language"`
	Role    string `json:"role,omitempty" jsonschema:"who said it: user (the default), assistant, system or tool"`
	Tool    string `json:"tool,omitempty" jsonschema:"the tool's name, when role is tool"`
}

// RememberOutput is the result of remember.
type RememberOutput struct {
	ID        string `json:"id" jsonschema:"the id of the stored turn"`
	Stored    bool   `json:"stored" jsonschema:"true: agentmem stored the turn"`
	Duplicate bool   `json:"duplicate" jsonschema:"true: a turn with this id was stored before, this call added nothing"`
}

// RecallInput is the input of recall.
type RecallInput struct {
	Query   string   `json:"query" jsonschema:"what to look for, in natural language"`
	Limit   int      `json:"limit,omitempty" jsonschema:"how many entries to return, 1-200 (default 10)"`
	Sources []string `json:"sources,omitempty" jsonschema:"where to search: short (this session), long (the user's facts and summaries), archive (every earlier turn of the user); default short, long and archive"`
	Types   []string `json:"types,omitempty" jsonschema:"only entries of these types: FACT, SUMMARY, CONVERSATION, TOOL_RESULT"`
}

// RecallEntry is one remembered entry.
type RecallEntry struct {
	ID        string    `json:"id" jsonschema:"the entry's id"`
	Type      string    `json:"type" jsonschema:"FACT, SUMMARY, CONVERSATION or TOOL_RESULT"`
	Content   string    `json:"content" jsonschema:"the remembered text"`
	Timestamp time.Time `json:"timestamp" jsonschema:"when it was said or became true (RFC 3339)"`
	Source    string    `json:"source" jsonschema:"short, long or archive"`
	Session   string    `json:"session,omitempty" jsonschema:"the session it comes from"`
	Score     float64   `json:"score" jsonschema:"relevance score, higher is better"`
}

// RecallOutput is the result of recall: the entries, best first.
type RecallOutput struct {
	Entries []RecallEntry `json:"entries" jsonschema:"the matching memory entries, most relevant first"`
}

// ContextInput is the input of get_context.
type ContextInput struct {
	Query  string `json:"query" jsonschema:"what the next answer is about"`
	Tokens int    `json:"tokens,omitempty" jsonschema:"token budget of the context text (default: the server's, 2000 unless configured)"`
}

// ContextOutput is the result of get_context.
type ContextOutput struct {
	Context string `json:"context" jsonschema:"the memory to put into the prompt, most relevant first; empty when nothing is remembered"`
	Tokens  int    `json:"tokens" jsonschema:"the token count of context"`
}

// ListFactsInput is the input of list_facts.
type ListFactsInput struct {
	History bool `json:"history,omitempty" jsonschema:"true: every version, superseded and deleted facts too; false (default): the facts that hold now"`
}

// Fact is one fact about the user: a view.Fact without its provenance and extractor.
type Fact struct {
	ID           string     `json:"id" jsonschema:"the fact's id"`
	Content      string     `json:"content" jsonschema:"the fact"`
	Category     string     `json:"category" jsonschema:"its category, e.g. preference or identity"`
	Key          string     `json:"key,omitempty" jsonschema:"the slot it fills (user.city): a newer fact with the same key supersedes it"`
	State        string     `json:"state" jsonschema:"live, superseded or deleted"`
	ValidFrom    time.Time  `json:"valid_from" jsonschema:"since when it holds"`
	ValidTo      *time.Time `json:"valid_to,omitempty" jsonschema:"until when it held, for a superseded fact"`
	SupersededBy string     `json:"superseded_by,omitempty" jsonschema:"the id of the fact that replaced it"`
	Confidence   float64    `json:"confidence" jsonschema:"the extractor's confidence, 0-1"`
}

// ListFactsOutput is the result of list_facts, oldest first.
type ListFactsOutput struct {
	Facts []Fact `json:"facts" jsonschema:"the user's facts, oldest first"`
	Total int    `json:"total" jsonschema:"how many facts there are"`
}

// GraphInput is the input of list_entities.
type GraphInput struct {
	At      string `json:"at,omitempty" jsonschema:"the time to show the graph at, RFC 3339 (default now)"`
	History bool   `json:"history,omitempty" jsonschema:"true: also every relation that ended (moved away, left a job), oldest first"`
}

// Entity is one entity of the user's graph.
type Entity struct {
	ID        string    `json:"id" jsonschema:"the entity's id"`
	Name      string    `json:"name" jsonschema:"its name, as first said"`
	Type      string    `json:"type,omitempty" jsonschema:"person, place, organization, thing or event; absent when unknown"`
	Aliases   []string  `json:"aliases,omitempty" jsonschema:"its other names in the conversations"`
	User      bool      `json:"user,omitempty" jsonschema:"true on the user's own entity"`
	Turns     int       `json:"turns" jsonschema:"how many turns name it"`
	FirstSeen time.Time `json:"first_seen" jsonschema:"when it was first named"`
	LastSeen  time.Time `json:"last_seen" jsonschema:"when it was last named"`
}

// Relation is one relation between two entities of the user's graph.
type Relation struct {
	Subject   string     `json:"subject" jsonschema:"the subject's name (user: the user)"`
	Relation  string     `json:"relation" jsonschema:"the relation: lives_in, works_at, sister, married_to, has_pet, …"`
	Object    string     `json:"object,omitempty" jsonschema:"the object's name; absent on a record that the relation ended"`
	ValidFrom time.Time  `json:"valid_from" jsonschema:"since when it holds"`
	ValidTo   *time.Time `json:"valid_to,omitempty" jsonschema:"until when it held, for one that ended"`
}

// GraphOutput is the result of list_entities.
type GraphOutput struct {
	At        time.Time  `json:"at" jsonschema:"the time the graph is shown at"`
	Entities  []Entity   `json:"entities" jsonschema:"the people, places, organizations, things and events the user's conversations named by then"`
	Relations []Relation `json:"relations" jsonschema:"the relations that held then (with history: every relation stated by then)"`
}

// EndSessionInput is the input of end_session: none.
type EndSessionInput struct{}

// EndSessionOutput is the result of end_session.
type EndSessionOutput struct {
	ID    string `json:"id" jsonschema:"the id of the stored session end event"`
	Ended bool   `json:"ended" jsonschema:"true: agentmem stored the session end; the facts of this conversation are being extracted"`
}

// ForgetInput is the input of forget_user.
type ForgetInput struct {
	Confirm bool `json:"confirm,omitempty" jsonschema:"must be true: forgetting removes everything remembered about the user, for good"`
}

// ForgetOutput is the result of forget_user.
type ForgetOutput struct {
	Forgotten map[string]int `json:"forgotten" jsonschema:"how many items of each kind were removed"`
}

var (
	roles       = []any{"user", "assistant", "system", "tool"}
	sources     = []any{events.SourceShort, events.SourceLong, events.SourceArchive}
	entryTypes  = []any{"FACT", "SUMMARY", "CONVERSATION", "TOOL_RESULT"}
	readOnly    = &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	destructive = &mcp.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)}
)

// inputSchema is the schema inferred from T (an object that allows no other properties),
// adjusted by patch.
func inputSchema[T any](patch func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	if patch != nil {
		patch(s.Properties)
	}
	return s
}

func (s *Server) register() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  ToolRemember,
		Title: "Remember",
		Description: "Store one conversation turn in the user's memory (this session). Use it for what the user " +
			"says about themselves, their preferences, decisions and anything worth recalling later. " +
			"Facts are extracted from the session when it ends.",
		InputSchema: inputSchema[RememberInput](func(p map[string]*jsonschema.Schema) {
			p["content"].MinLength = new(1)
			p["role"].Enum = roles
			p["role"].Default = json.RawMessage(`"user"`)
		}),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, s.remember)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  ToolRecall,
		Title: "Recall",
		Description: "Search the user's memory: this session's turns, the user's facts and summaries of earlier " +
			"sessions (and, with sources [\"archive\"], every earlier turn). Returns the entries, best first.",
		InputSchema: inputSchema[RecallInput](func(p map[string]*jsonschema.Schema) {
			p["query"].MinLength = new(1)
			p["limit"].Minimum, p["limit"].Maximum = new(1.0), new(float64(events.MaxRetrieveLimit))
			p["sources"].Items.Enum = sources
			p["types"].Items.Enum = entryTypes
		}),
		Annotations: readOnly,
	}, s.recall)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  ToolGetContext,
		Title: "Get context",
		Description: "Build the memory context to put into a prompt for a question: the most relevant remembered " +
			"entries as text, within a token budget.",
		InputSchema: inputSchema[ContextInput](func(p map[string]*jsonschema.Schema) {
			p["query"].MinLength = new(1)
			p["tokens"].Minimum = new(1.0)
		}),
		Annotations: readOnly,
	}, s.getContext)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        ToolListFacts,
		Title:       "List facts",
		Description: "List the facts agentmem knows about the user (those that hold now, or with history: true every version).",
		InputSchema: inputSchema[ListFactsInput](nil),
		Annotations: readOnly,
	}, s.listFacts)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  ToolGraph,
		Title: "List entities and relations",
		Description: "List the people, places, organizations, things and events agentmem knows from the user's " +
			"conversations, and how they relate (the user lives in Lisbon, the user's sister is Anna), as they were " +
			"at a time (at, default now; history: true adds the relations that ended).",
		InputSchema: inputSchema[GraphInput](nil),
		Annotations: readOnly,
	}, s.listEntities)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  ToolEndSession,
		Title: "End the session",
		Description: "End this conversation's session now: agentmem extracts the facts of this conversation at once " +
			"and makes them available to the user's other sessions and MCP clients now, rather than after the " +
			"session has been idle for a while. Call it when the conversation is over, or when the user said " +
			"something other sessions should know. A later remember reopens the session.",
		InputSchema: inputSchema[EndSessionInput](nil),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
	}, s.endSession)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  ToolForgetUser,
		Title: "Forget the user",
		Description: "Permanently remove everything agentmem remembers about the user: facts and their history, " +
			"summaries, every session's turns. Only when the user asks for it; requires confirm: true.",
		InputSchema: inputSchema[ForgetInput](nil),
		Annotations: destructive,
	}, s.forgetUser)
}

func (s *Server) remember(ctx context.Context, _ *mcp.CallToolRequest, in RememberInput) (*mcp.CallToolResult, RememberOutput, error) {
	if in.Role == "" {
		in.Role = "user"
	}
	ack, err := s.cl.Publish(ctx, client.Turn{Session: s.cfg.Session, User: s.cfg.User, Role: in.Role, Content: in.Content, Tool: in.Tool})
	if err != nil {
		return nil, RememberOutput{}, s.toolError(ToolRemember, "the turns stream", "memory.turns."+s.cfg.Tenant+"."+s.cfg.Session, err)
	}
	s.setPending(ack.ID)
	s.log.Debug().Str("tool", ToolRemember).Str("event_id", ack.ID).Uint64("stream_seq", ack.Sequence).Msg("turn stored")
	return nil, RememberOutput{ID: ack.ID, Stored: true, Duplicate: ack.Duplicate}, nil
}

func (s *Server) recall(ctx context.Context, _ *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, RecallOutput, error) {
	req := events.RetrieveRequest{Query: in.Query, Sources: in.Sources, Types: in.Types}
	if in.Limit != 0 {
		req.Limit = &in.Limit
	}
	reply, err := s.retrieve(ctx, ToolRecall, req)
	if err != nil {
		return nil, RecallOutput{}, err
	}
	out := RecallOutput{Entries: make([]RecallEntry, 0, len(reply.Entries))}
	for _, e := range reply.Entries {
		out.Entries = append(out.Entries, RecallEntry{ID: e.ID, Type: e.Type, Content: e.Content, Timestamp: e.Timestamp,
			Source: e.Source, Session: e.Session, Score: e.Score})
	}
	return nil, out, nil
}

func (s *Server) getContext(ctx context.Context, _ *mcp.CallToolRequest, in ContextInput) (*mcp.CallToolResult, ContextOutput, error) {
	tokens := in.Tokens
	if tokens <= 0 {
		tokens = s.cfg.ContextTokens
	}
	reply, err := s.retrieve(ctx, ToolGetContext, events.RetrieveRequest{Query: in.Query, ContextTokens: &tokens})
	if err != nil {
		return nil, ContextOutput{}, err
	}
	text := reply.Context
	if text == "" {
		text = "Nothing relevant is remembered."
	}
	// The text content is the context itself, ready for a prompt; the structured result carries
	// it too, with its token count.
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	return res, ContextOutput{Context: reply.Context, Tokens: reply.ContextTokens}, nil
}

// retrieve asks the retriever on the configured session and user. When remember stored a turn
// since the last retrieve, it first waits (up to Config.Wait) for that turn to be applied; a turn
// that is not applied in time (rejected, or ingest is behind) does not fail the call: it is
// answered from what is applied.
func (s *Server) retrieve(ctx context.Context, tool string, req events.RetrieveRequest) (events.RetrieveReply, error) {
	req.Session, req.User = s.cfg.Session, s.cfg.User
	after, wait := s.after()
	req.After, req.WaitMS = after, wait
	reply, err := s.cl.Retrieve(ctx, req)
	var se *client.ServiceError
	if after != "" && errors.As(err, &se) && se.Code == 503 && se.Field == "after" {
		s.log.Warn().Str("tool", tool).Str("event_id", after).Msg("the last remembered turn is not applied yet; answering without it")
		s.settle(after)
		req.After, req.WaitMS = "", 0
		reply, err = s.cl.Retrieve(ctx, req)
	} else if err == nil && after != "" {
		s.settle(after)
	}
	if err != nil {
		return reply, s.toolError(tool, "the retriever", "memory.retrieve."+s.cfg.Tenant, err)
	}
	s.log.Debug().Str("tool", tool).Int("entries", len(reply.Entries)).Msg("retrieved")
	return reply, nil
}

func (s *Server) listFacts(ctx context.Context, _ *mcp.CallToolRequest, in ListFactsInput) (*mcp.CallToolResult, ListFactsOutput, error) {
	store, err := s.longTerm(ctx)
	if err != nil {
		return nil, ListFactsOutput{}, s.toolError(ToolListFacts, "the long-term store", s.topo.LongTermBucket(), err)
	}
	recs, err := store.User(ctx, s.cfg.Tenant, s.cfg.User)
	if err != nil {
		return nil, ListFactsOutput{}, s.toolError(ToolListFacts, "the long-term store", s.topo.LongTermBucket(), err)
	}
	facts := view.Facts(recs.Facts, in.History)
	out := ListFactsOutput{Facts: make([]Fact, 0, len(facts)), Total: len(facts)}
	for _, f := range facts {
		out.Facts = append(out.Facts, Fact{ID: f.ID, Content: f.Content, Category: f.Category, Key: f.Key, State: f.State,
			ValidFrom: f.ValidFrom, ValidTo: f.ValidTo, SupersededBy: f.SupersededBy, Confidence: f.Confidence})
	}
	return nil, out, nil
}

func (s *Server) listEntities(ctx context.Context, _ *mcp.CallToolRequest, in GraphInput) (*mcp.CallToolResult, GraphOutput, error) {
	at := time.Now().UTC()
	if in.At != "" {
		t, err := time.Parse(time.RFC3339Nano, in.At)
		if err != nil {
			return nil, GraphOutput{}, fmt.Errorf("%s: at %q: want an RFC 3339 time such as 2026-11-30T10:00:00Z", ToolGraph, in.At)
		}
		at = t
	}
	store, err := s.longTerm(ctx)
	if err != nil {
		return nil, GraphOutput{}, s.toolError(ToolGraph, "the long-term store", s.topo.LongTermBucket(), err)
	}
	recs, err := store.User(ctx, s.cfg.Tenant, s.cfg.User)
	if err != nil {
		return nil, GraphOutput{}, s.toolError(ToolGraph, "the long-term store", s.topo.LongTermBucket(), err)
	}
	snap := graph.Build(recs).At(at)
	out := GraphOutput{At: at, Entities: make([]Entity, 0, len(snap.Entities)), Relations: []Relation{}}
	for _, n := range snap.Entities {
		out.Entities = append(out.Entities, Entity{ID: n.ID, Name: n.Name, Type: n.Type, Aliases: n.Aliases, User: n.User,
			Turns: len(n.Provenance), FirstSeen: n.FirstSeen, LastSeen: n.LastSeen})
	}
	edges := snap.Relations
	if in.History {
		edges = snap.History
	}
	for _, e := range edges {
		out.Relations = append(out.Relations, Relation{Subject: e.SubjectName, Relation: e.Relation, Object: e.ObjectName,
			ValidFrom: e.ValidFrom, ValidTo: e.ValidTo})
	}
	return nil, out, nil
}

// endSession publishes the end of the configured session for the configured user, as
// client.EndSession does for any agent.
func (s *Server) endSession(ctx context.Context, _ *mcp.CallToolRequest, _ EndSessionInput) (*mcp.CallToolResult, EndSessionOutput, error) {
	ack, err := s.cl.EndSession(ctx, s.cfg.Session, s.cfg.User)
	if err != nil {
		return nil, EndSessionOutput{}, s.toolError(ToolEndSession, "the turns stream", "memory.turns."+s.cfg.Tenant+"."+s.cfg.Session, err)
	}
	s.log.Info().Str("tool", ToolEndSession).Str("event_id", ack.ID).Uint64("stream_seq", ack.Sequence).Msg("session ended")
	return nil, EndSessionOutput{ID: ack.ID, Ended: true}, nil
}

func (s *Server) forgetUser(ctx context.Context, _ *mcp.CallToolRequest, in ForgetInput) (*mcp.CallToolResult, ForgetOutput, error) {
	if !in.Confirm {
		return nil, ForgetOutput{}, fmt.Errorf("forget_user refused: it permanently removes everything remembered about user %q; "+
			"call it again with confirm: true only if the user asked for it", s.cfg.User)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ForgetTimeout)
	defer cancel()
	reply, err := s.cl.Forget(ctx, s.cfg.User)
	if err != nil {
		return nil, ForgetOutput{}, s.toolError(ToolForgetUser, "the extractor", "memory.forget."+s.cfg.Tenant, err)
	}
	// Nothing remembered before the forget is worth waiting for.
	s.setPending("")
	s.log.Info().Str("tool", ToolForgetUser).Interface("forgotten", reply.Forgotten).Msg("user forgotten")
	return nil, ForgetOutput{Forgotten: reply.Forgotten}, nil
}
