package inspector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/view"
)

// FactView is one version of a fact, the record as stored with its state: live, superseded (by
// the fact named in superseded_by, from valid_to on) or deleted (view.FactState).
type FactView struct {
	longterm.Fact
	Status string `json:"status"`
}

// FactHistory is every version of one fact, newest first: the facts of one stable key
// (user.city), or a fact without a key on its own.
type FactHistory struct {
	Key string `json:"key"`
	// Live is the id of the version that holds now, empty when none does.
	Live     string     `json:"live,omitempty"`
	Versions []FactView `json:"versions"`
}

// TurnRef is a turn named by a fact's or a summary's provenance, with its text.
type TurnRef struct {
	Session string `json:"session"`
	Entry
}

// UserFacts is the answer of GET /api/tenants/{tenant}/users/{user}/facts.
type UserFacts struct {
	Tenant    string                `json:"tenant"`
	User      string                `json:"user"`
	Facts     []FactView            `json:"facts"`
	Histories []FactHistory         `json:"histories"`
	Summaries []longterm.Summary    `json:"summaries"`
	Sessions  []longterm.SessionRef `json:"sessions"`
	// Turns are the provenance turns of the facts, by id, with the session that holds them.
	Turns map[string][]TurnRef `json:"turns"`
}

func (i *Inspector) handleFacts(w http.ResponseWriter, r *http.Request) {
	tenant, ok := i.token(w, r, "tenant")
	if !ok {
		return
	}
	user, ok := i.token(w, r, "user")
	if !ok {
		return
	}
	ctx, cancel := i.bound(r)
	defer cancel()
	out, err := i.userFacts(ctx, tenant, user)
	if err != nil {
		i.fail(w, r, "reading facts", err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (i *Inspector) userFacts(ctx context.Context, tenant, user string) (UserFacts, error) {
	recs, err := i.longterm.User(ctx, tenant, user)
	if err != nil {
		return UserFacts{}, fmt.Errorf("reading long-term memory of %q: %w", user, err)
	}
	out := UserFacts{Tenant: tenant, User: user, Facts: []FactView{}, Histories: []FactHistory{},
		Summaries: recs.Summaries, Sessions: recs.Sessions, Turns: map[string][]TurnRef{}}
	if out.Summaries == nil {
		out.Summaries = []longterm.Summary{}
	}
	if out.Sessions == nil {
		out.Sessions = []longterm.SessionRef{}
	}
	facts := make([]FactView, 0, len(recs.Facts))
	for _, f := range recs.Facts {
		v := view.NewFact(f)
		facts = append(facts, FactView{Fact: v.Stored, Status: v.State})
	}
	// Newest version first; live before the rest at the same time.
	slices.SortStableFunc(facts, func(a, b FactView) int {
		if c := b.ValidFrom.Compare(a.ValidFrom); c != 0 {
			return c
		}
		return cmp.Compare(rank(a.Status != view.FactLive), rank(b.Status != view.FactLive))
	})
	groups := map[string]int{}
	for _, v := range facts {
		f := v.Fact
		out.Facts = append(out.Facts, v)
		key := f.Key
		if key == "" {
			key = "fact:" + f.ID
		}
		gi, ok := groups[key]
		if !ok {
			gi = len(out.Histories)
			groups[key] = gi
			out.Histories = append(out.Histories, FactHistory{Key: key})
		}
		h := &out.Histories[gi]
		h.Versions = append(h.Versions, v)
		if v.Status == view.FactLive && h.Live == "" {
			h.Live = f.ID
		}
	}
	// Histories with a live version first, then by their newest version.
	slices.SortStableFunc(out.Histories, func(a, b FactHistory) int {
		if (a.Live == "") != (b.Live == "") {
			return cmp.Compare(rank(a.Live == ""), rank(b.Live == ""))
		}
		return b.Versions[0].ValidFrom.Compare(a.Versions[0].ValidFrom)
	})
	// Resolve the provenance turns from the sessions the facts came from.
	want := map[string]bool{}
	var sessions []string
	for _, f := range facts {
		for _, id := range f.Provenance {
			want[id] = true
		}
		for _, s := range f.Sessions {
			if !slices.Contains(sessions, s) {
				sessions = append(sessions, s)
			}
		}
	}
	for _, s := range sessions {
		h, _, err := i.sessions.Header(ctx, session.Key{Tenant: tenant, Session: s})
		if errors.Is(err, session.ErrNotFound) {
			continue
		}
		if err != nil {
			return UserFacts{}, err
		}
		turns, err := i.turns(ctx, h)
		if err != nil {
			return UserFacts{}, err
		}
		for id, t := range turns {
			if want[id] {
				out.Turns[id] = append(out.Turns[id], TurnRef{Session: s, Entry: t.entry()})
			}
		}
	}
	for id := range out.Turns {
		slices.SortFunc(out.Turns[id], func(a, b TurnRef) int { return cmp.Compare(a.Session, b.Session) })
	}
	return out, nil
}

// rank orders false before true.
func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}
