package inspector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// TenantInfo is one tenant of GET /api/tenants.
type TenantInfo struct {
	Tenant   string   `json:"tenant"`
	Sessions int      `json:"sessions"`
	Users    []string `json:"users"`
	Turns    int      `json:"turns"`
	Tokens   int      `json:"tokens"`
}

// SessionInfo is one session of GET /api/tenants/{tenant}/sessions: its header, read as is.
type SessionInfo struct {
	Session       string    `json:"session"`
	User          string    `json:"user,omitempty"`
	Turns         int       `json:"turns"`
	Kept          int       `json:"kept"`
	Tokens        int       `json:"tokens"`
	Pending       int       `json:"pending"`
	PendingTokens int       `json:"pending_tokens"`
	Budget        int       `json:"budget"`
	Ratio         float64   `json:"ratio"`
	Above         bool      `json:"above"`
	Pressures     int       `json:"pressures"`
	Summaries     int       `json:"summaries"`
	Rejected      int       `json:"rejected"`
	Ended         bool      `json:"ended"`
	FirstTurnAt   time.Time `json:"first_turn_at,omitzero"`
	LastTurnAt    time.Time `json:"last_turn_at,omitzero"`
	Updated       time.Time `json:"updated,omitzero"`
	Forgotten     time.Time `json:"forgotten,omitzero"`
}

func sessionInfo(h session.Header) SessionInfo {
	return SessionInfo{
		Session: h.Session, User: h.User, Turns: h.Turns, Kept: h.Kept, Tokens: h.Tokens,
		Pending: h.Pending, PendingTokens: h.PendingTokens, Budget: h.Budget, Ratio: h.Ratio(),
		Above: h.Above, Pressures: h.Pressures, Summaries: h.Summaries, Rejected: h.Rejected,
		Ended: h.Ended, FirstTurnAt: h.FirstTurnAt, LastTurnAt: h.LastTurnAt, Updated: h.Updated,
		Forgotten: h.Forgotten,
	}
}

// headers lists the stored session headers of the tenants shown ("" for all of them).
func (i *Inspector) headers(ctx context.Context, tenant string) ([]session.Header, error) {
	var out []session.Header
	err := i.sessions.List(ctx, func(h session.Header) error {
		if (tenant == "" || h.Tenant == tenant) && i.shows(ctx, h.Tenant) {
			out = append(out, h)
		}
		return nil
	})
	return out, err
}

func (i *Inspector) handleTenants(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := i.bound(r)
	defer cancel()
	hs, err := i.headers(ctx, "")
	if err != nil {
		i.fail(w, r, "listing sessions", err)
		return
	}
	byName := map[string]*TenantInfo{}
	for _, t := range i.tenants(ctx) {
		byName[t] = &TenantInfo{Tenant: t, Users: []string{}}
	}
	users := map[string]map[string]bool{}
	for _, h := range hs {
		ti := byName[h.Tenant]
		if ti == nil {
			ti = &TenantInfo{Tenant: h.Tenant, Users: []string{}}
			byName[h.Tenant] = ti
		}
		if !h.Forgotten.IsZero() && h.User == "" {
			continue
		}
		ti.Sessions++
		ti.Turns += h.Turns
		ti.Tokens += h.Tokens
		if h.User != "" {
			if users[h.Tenant] == nil {
				users[h.Tenant] = map[string]bool{}
			}
			if !users[h.Tenant][h.User] {
				users[h.Tenant][h.User] = true
				ti.Users = append(ti.Users, h.User)
			}
		}
	}
	out := make([]TenantInfo, 0, len(byName))
	for _, ti := range byName {
		slices.Sort(ti.Users)
		out = append(out, *ti)
	}
	slices.SortFunc(out, func(a, b TenantInfo) int { return cmp.Compare(a.Tenant, b.Tenant) })
	writeJSON(w, http.StatusOK, map[string]any{"tenants": out})
}

func (i *Inspector) handleSessions(w http.ResponseWriter, r *http.Request) {
	tenant, ok := i.token(w, r, "tenant")
	if !ok {
		return
	}
	ctx, cancel := i.bound(r)
	defer cancel()
	hs, err := i.headers(ctx, tenant)
	if err != nil {
		i.fail(w, r, "listing sessions", err)
		return
	}
	out := make([]SessionInfo, 0, len(hs))
	users := []string{}
	for _, h := range hs {
		out = append(out, sessionInfo(h))
		if h.User != "" && !slices.Contains(users, h.User) {
			users = append(users, h.User)
		}
	}
	// Most recently active first.
	slices.SortStableFunc(out, func(a, b SessionInfo) int { return b.LastTurnAt.Compare(a.LastTurnAt) })
	slices.Sort(users)
	writeJSON(w, http.StatusOK, map[string]any{"tenant": tenant, "sessions": out, "users": users})
}

// Entry is a short-term entry of GET /api/tenants/{tenant}/sessions/{session}, with its text
// read back from the turns stream (a summary's text is its own).
type Entry struct {
	ID         string         `json:"id"`
	Type       memory.Type    `json:"type"`
	Role       string         `json:"role,omitempty"`
	Tokens     int            `json:"tokens"`
	Timestamp  time.Time      `json:"timestamp,omitzero"`
	Seq        uint64         `json:"seq,omitempty"`
	Content    string         `json:"content"`
	Tool       string         `json:"tool,omitempty"`
	Status     string         `json:"status,omitempty"` // summaries: "pending" until the text arrives, then "applied"
	Provenance []string       `json:"provenance,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Gauge is a session's budget: the kept tokens against the budget and the pressure threshold.
type Gauge struct {
	Tokens         int     `json:"tokens"`
	Budget         int     `json:"budget"`
	Ratio          float64 `json:"ratio"`
	ThresholdRatio float64 `json:"threshold_ratio"`
	Threshold      int     `json:"threshold"`
	PendingTokens  int     `json:"pending_tokens"`
	// State is "pressure" at or above the threshold, "compressing" while a named range waits for
	// its summary below it, "ok" otherwise.
	State     string `json:"state"`
	Above     bool   `json:"above"`
	Pressures int    `json:"pressures"`
	Summaries int    `json:"summaries"`
}

// SummaryView is a summary of a session with the entries it replaced (for a pending one, the
// entries it stands for until its text arrives).
type SummaryView struct {
	ID string `json:"id"`
	// Status is "pending" (named, its text not arrived), "stored" (written by the compressor,
	// not yet applied by ingest), "applied" (its text in short-term memory) or "replaced" (folded
	// into a later summary).
	Status     string       `json:"status"`
	Pressure   int          `json:"pressure,omitempty"`
	Content    string       `json:"content"`
	Tokens     int          `json:"tokens"`
	Timestamp  time.Time    `json:"timestamp,omitzero"`
	Summarizer string       `json:"summarizer,omitempty"`
	Usage      events.Usage `json:"usage,omitzero"`
	Replaces   []string     `json:"replaces"`
	Provenance []string     `json:"provenance"`
	// Replaced holds the replaced entries: turns with their text, earlier summaries by id.
	Replaced []Entry `json:"replaced"`
}

// PressureView is one pressure event of a session, as stored in the pressure stream.
type PressureView struct {
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	events.Pressure
}

// SessionDetail is the answer of GET /api/tenants/{tenant}/sessions/{session}.
type SessionDetail struct {
	Tenant  string      `json:"tenant"`
	Session SessionInfo `json:"session"`
	Gauge   Gauge       `json:"gauge"`
	// Entries are the kept entries, oldest first; Pending the entries evicted over the budget and
	// not yet named for compression.
	Entries   []Entry        `json:"entries"`
	Pending   []Entry        `json:"pending"`
	Summaries []SummaryView  `json:"summaries"`
	Pressure  []PressureView `json:"pressure"`
	Usage     memory.Usage   `json:"usage"`
}

func (i *Inspector) handleSession(w http.ResponseWriter, r *http.Request) {
	tenant, ok := i.token(w, r, "tenant")
	if !ok {
		return
	}
	sess, ok := i.token(w, r, "session")
	if !ok {
		return
	}
	ctx, cancel := i.bound(r)
	defer cancel()
	d, err := i.sessionDetail(ctx, session.Key{Tenant: tenant, Session: sess})
	if errors.Is(err, session.ErrNotFound) {
		writeError(w, http.StatusNotFound, "session", fmt.Sprintf("no session %q in tenant %q", sess, tenant))
		return
	}
	if err != nil {
		i.fail(w, r, "reading session", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (i *Inspector) sessionDetail(ctx context.Context, key session.Key) (SessionDetail, error) {
	st, err := i.sessions.Load(ctx, key, 0)
	if err != nil {
		return SessionDetail{}, err
	}
	if st.Revision() == 0 {
		return SessionDetail{}, session.ErrNotFound
	}
	h := st.Header
	turns, err := i.turns(ctx, h)
	if err != nil {
		return SessionDetail{}, err
	}
	d := SessionDetail{Tenant: key.Tenant, Session: sessionInfo(h), Entries: []Entry{}, Pending: []Entry{},
		Summaries: []SummaryView{}, Pressure: []PressureView{}}
	sv := view.NewSession(st)
	for _, e := range sv.KeptList() {
		d.Entries = append(d.Entries, entryView(e.Stored, turns))
	}
	for _, e := range sv.PendingList() {
		d.Pending = append(d.Pending, entryView(e.Stored, turns))
	}
	if d.Pressure, err = i.pressures(ctx, key); err != nil {
		return SessionDetail{}, err
	}
	var stored []longterm.Summary
	if h.User != "" {
		recs, err := i.longterm.User(ctx, key.Tenant, h.User)
		if err != nil {
			return SessionDetail{}, fmt.Errorf("reading long-term memory of %q: %w", h.User, err)
		}
		for _, s := range recs.Summaries {
			if s.Session == key.Session {
				stored = append(stored, s)
			}
		}
	}
	d.Summaries = summaries(st, stored, turns)
	rep, err := i.usage.Report(ctx, key.Tenant)
	if err != nil {
		return SessionDetail{}, fmt.Errorf("reading usage: %w", err)
	}
	for _, tu := range rep.Tenants {
		for _, su := range tu.Sessions {
			if tu.Tenant == key.Tenant && su.Session == key.Session {
				d.Usage = su.Usage
			}
		}
	}
	d.Gauge = i.gauge(h, d.Summaries)
	return d, nil
}

// gauge places the kept tokens against the budget and ingest's pressure threshold.
func (i *Inspector) gauge(h session.Header, sums []SummaryView) Gauge {
	g := Gauge{
		Tokens: h.Tokens, Budget: h.Budget, Ratio: h.Ratio(), ThresholdRatio: i.cfg.Budget.PressureRatio,
		Threshold:     i.cfg.Budget.Threshold(),
		PendingTokens: h.PendingTokens, Above: h.Above, Pressures: h.Pressures, Summaries: h.Summaries,
		State: "ok",
	}
	for _, s := range sums {
		if s.Status == "pending" || s.Status == "stored" {
			g.State = "compressing"
		}
	}
	if h.Budget > 0 && i.cfg.Budget.NeedsCompression(h.Tokens) {
		g.State = "pressure"
	}
	return g
}

// summaries lists a session's summaries, oldest first: those short-term memory holds (applied,
// or pending with the entries they stand for) and those long-term memory keeps that a later
// summary replaced.
func summaries(st *session.State, stored []longterm.Summary, turns map[string]turnText) []SummaryView {
	byID := map[string]longterm.Summary{}
	for _, s := range stored {
		byID[s.ID] = s
	}
	out := []SummaryView{}
	seen := map[string]bool{}
	var visit func(e memory.Entry, replaced bool)
	visit = func(e memory.Entry, replaced bool) {
		if e.Type != memory.Summary || seen[e.ID] {
			return
		}
		seen[e.ID] = true
		v := SummaryView{ID: e.ID, Status: "applied", Content: e.Content, Tokens: e.Tokens, Timestamp: e.Timestamp,
			Provenance: e.Provenance, Replaces: []string{}, Replaced: []Entry{}}
		if n, ok := e.Metadata["pressure"].(float64); ok {
			v.Pressure = int(n)
		}
		if view.Named(e) {
			// Named for compression, the summary not arrived: it stands for the covered entries.
			v.Status = "pending"
			for _, part := range st.Covered(e.ID) {
				v.Replaces = append(v.Replaces, part.ID)
				v.Replaced = append(v.Replaced, entryView(part, turns))
				visit(part, true)
			}
		}
		if replaced {
			v.Status = "replaced"
		}
		if s, ok := byID[e.ID]; ok {
			v.Content, v.Summarizer, v.Usage = s.Content, s.Summarizer, s.Usage
			if v.Status == "pending" {
				v.Status = "stored" // the compressor wrote it; ingest has not applied it yet
			}
			if len(v.Replaced) == 0 {
				v.Replaces = s.Replaces
				v.Replaced = replacedEntries(s.Replaces, byID, turns)
			}
			if len(v.Provenance) == 0 {
				v.Provenance = s.Provenance
			}
		}
		out = append(out, v)
	}
	for _, e := range st.Short.Pending() {
		visit(e, false)
	}
	for _, e := range st.Short.Entries() {
		visit(e, false)
	}
	// Summaries a later summary replaced are no longer in short-term memory, only in long-term.
	for _, s := range stored {
		if seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		out = append(out, SummaryView{
			ID: s.ID, Status: "replaced", Content: s.Content, Tokens: memory.Estimate(s.Content), Timestamp: s.Timestamp,
			Summarizer: s.Summarizer, Usage: s.Usage, Replaces: s.Replaces, Provenance: s.Provenance,
			Replaced: replacedEntries(s.Replaces, byID, turns),
		})
	}
	for i := range out {
		if out[i].Provenance == nil {
			out[i].Provenance = []string{}
		}
	}
	slices.SortStableFunc(out, func(a, b SummaryView) int { return a.Timestamp.Compare(b.Timestamp) })
	return out
}

// replacedEntries resolves the ids a stored summary replaced: turns with their text, summaries
// with theirs.
func replacedEntries(ids []string, sums map[string]longterm.Summary, turns map[string]turnText) []Entry {
	out := make([]Entry, 0, len(ids))
	for _, id := range ids {
		if s, ok := sums[id]; ok {
			out = append(out, Entry{ID: id, Type: memory.Summary, Content: s.Content, Timestamp: s.Timestamp,
				Status: "replaced", Provenance: s.Provenance})
			continue
		}
		if t, ok := turns[id]; ok {
			out = append(out, t.entry())
			continue
		}
		out = append(out, Entry{ID: id, Type: memory.Conversation})
	}
	return out
}

// entryView fills an entry's text from the turns read back from the stream.
func entryView(e memory.Entry, turns map[string]turnText) Entry {
	v := Entry{ID: e.ID, Type: e.Type, Role: e.Role, Tokens: e.Tokens, Timestamp: e.Timestamp, Seq: e.Seq,
		Content: e.Content, Provenance: e.Provenance, Metadata: e.Metadata}
	if e.Type == memory.Summary {
		v.Status = "applied"
		if view.Named(e) {
			v.Status = "pending"
		}
		return v
	}
	if t, ok := turns[e.ID]; ok {
		v.Content, v.Tool, v.Metadata = t.content, t.tool, t.metadata
	}
	return v
}

// turnText is a turn read back from the turns stream.
type turnText struct {
	id       string
	session  string
	role     string
	content  string
	tool     string
	metadata map[string]any
	seq      uint64
	at       time.Time
}

func (t turnText) entry() Entry {
	return Entry{ID: t.id, Type: memory.TypeForRole(t.role), Role: t.role, Tokens: memory.Estimate(t.content),
		Timestamp: t.at, Seq: t.seq, Content: t.content, Tool: t.tool, Metadata: t.metadata}
}

// turns reads every turn of a session back from the turns stream (the archive), by id. Messages
// that are not turns (session ends, bad input) are skipped.
func (i *Inspector) turns(ctx context.Context, h session.Header) (map[string]turnText, error) {
	subject := events.SessionFilter(h.Tenant, h.Session)
	if h.Partition >= 0 {
		subject = events.PartitionedSubject(h.Partition, h.Tenant, h.Session)
	}
	out := map[string]turnText{}
	err := archive.NewReader(i.js, i.cfg.Topology.TurnsStream()).Scan(ctx, subject, 1, 0, func(m *jetstream.RawStreamMsg) error {
		t, err := events.ReadStoredTurn(m)
		if err != nil {
			return nil
		}
		if _, dup := out[t.ID]; dup {
			return nil // a late copy of an applied turn: the first one is the one applied
		}
		out[t.ID] = turnText{id: t.ID, session: h.Session, role: t.Turn.Role, content: t.Turn.Content,
			tool: t.Turn.Tool, metadata: t.Turn.Metadata, seq: t.Seq, at: t.Time}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the turns of %s.%s: %w", h.Tenant, h.Session, err)
	}
	return out, nil
}

// pressures reads a session's pressure events from the pressure stream, oldest first.
func (i *Inspector) pressures(ctx context.Context, key session.Key) ([]PressureView, error) {
	subject, err := events.PressureSubject(key.Tenant, key.Session)
	if err != nil {
		return nil, err
	}
	out := []PressureView{}
	err = archive.NewReader(i.js, i.cfg.Topology.PressureStream()).Scan(ctx, subject, 1, 0, func(m *jetstream.RawStreamMsg) error {
		ev, err := events.DecodeRaw(m)
		if err != nil {
			return nil
		}
		p, err := events.DecodeData[events.Pressure](ev)
		if err != nil {
			return nil
		}
		out = append(out, PressureView{ID: ev.ID(), Time: ev.Time().UTC(), Pressure: p})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the pressure events of %s: %w", key, err)
	}
	return out, nil
}
