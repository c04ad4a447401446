package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/events"
)

// FactCorrection is the body of PUT and PATCH /v1/tenants/{tenant}/users/{user}/facts/{id}.
type FactCorrection struct {
	// Content is the corrected fact; it is required.
	Content string `json:"content"`
}

// factPath returns the user and fact id of a fact route, or a 400 problem naming the bad one.
func factPath(r *http.Request) (user, id string, p *Problem) {
	user, id = r.PathValue("user"), r.PathValue("id")
	if err := events.ValidateToken("user", user); err != nil {
		return "", "", invalid(err)
	}
	if err := (events.ForgetRequest{User: user, FactID: id}).Validate(); err != nil {
		return "", "", problem(http.StatusBadRequest, "id", fmt.Sprintf("fact id %q is not a fact id (want [A-Za-z0-9_-]{1,128})", id))
	}
	return user, id, nil
}

// noFact is the 404 problem for a fact the user does not have.
func noFact(tenant, user, id string) *Problem {
	return problem(http.StatusNotFound, "id", fmt.Sprintf("user %q of tenant %q has no fact %q", user, tenant, id))
}

// getFact answers one fact of a user, whatever its state (live, superseded or deleted), with its
// history fields; 404 when the user has no such fact.
func (g *Gateway) getFact(w http.ResponseWriter, r *http.Request, tenant string) {
	user, id, p := factPath(r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	f, p := g.readFact(r.Context(), tenant, user, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// readFact reads one fact from the long-term store.
func (g *Gateway) readFact(ctx context.Context, tenant, user, id string) (Fact, *Problem) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	_, store, err := g.stores(ctx)
	if err != nil {
		return Fact{}, g.readProblem(err)
	}
	f, err := store.Fact(ctx, tenant, user, id)
	if errors.Is(err, longterm.ErrNotFound) {
		return Fact{}, noFact(tenant, user, id)
	}
	if err != nil {
		return Fact{}, g.readProblem(err)
	}
	return view.NewFact(f), nil
}

// correctFact corrects one fact through memory.forget.<tenant>, as memctl facts --correct and
// client.Correct do: a new fact with the body's content (same category and key) supersedes it,
// and the old one stays in the history. The reply is the correcting fact, with Location its URL.
func (g *Gateway) correctFact(w http.ResponseWriter, r *http.Request, tenant string) {
	user, id, p := factPath(r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	if p := requireJSON(r); p != nil {
		writeProblem(w, r, p)
		return
	}
	body, p := readBody(r, g.cfg.MaxBodyBytes)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	var in FactCorrection
	if p := decodeStrict(body, &in, `{"content": "<the corrected fact>"}`); p != nil {
		writeProblem(w, r, p)
		return
	}
	if strings.TrimSpace(in.Content) == "" {
		writeProblem(w, r, problem(http.StatusBadRequest, "content", "content is required: the corrected fact"))
		return
	}
	// The same content (after normalising) is the same fact id: the forget service would mark the
	// fact superseded by itself, leaving no live fact.
	if fact.ID(tenant, user, in.Content) == id {
		writeProblem(w, r, problem(http.StatusBadRequest, "content", fmt.Sprintf("content states fact %q as it is: nothing to correct", id)))
		return
	}
	reply, p := g.changeFact(r, tenant, events.ForgetRequest{User: user, FactID: id, Content: in.Content})
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	if reply.Fact == nil {
		writeProblem(w, r, problem(http.StatusBadGateway, "", "the forget service answered the correction without the correcting fact"))
		return
	}
	f, p := g.readFact(r.Context(), tenant, user, reply.Fact.ID)
	if p != nil {
		p.Detail = fmt.Sprintf("fact %q was corrected by fact %q, but reading that back failed (repeating the correction is safe): %s", id, reply.Fact.ID, p.Detail)
		writeProblem(w, r, p)
		return
	}
	w.Header().Set("Location", "/v1/tenants/"+tenant+"/users/"+user+"/facts/"+url.PathEscape(f.ID))
	writeJSON(w, http.StatusOK, f)
}

// deleteFact deletes one fact through memory.forget.<tenant>, as memctl facts --delete and
// client.ForgetFact do: it leaves the live facts and stays in the history, state deleted. The
// reply is the deleted fact. Deleting it again changes nothing.
func (g *Gateway) deleteFact(w http.ResponseWriter, r *http.Request, tenant string) {
	user, id, p := factPath(r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	if _, p := g.changeFact(r, tenant, events.ForgetRequest{User: user, FactID: id}); p != nil {
		writeProblem(w, r, p)
		return
	}
	f, p := g.readFact(r.Context(), tenant, user, id)
	if p != nil {
		p.Detail = fmt.Sprintf("fact %q was deleted, but reading it back failed (repeating the delete is safe): %s", id, p.Detail)
		writeProblem(w, r, p)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// changeFact sends a fact deletion or correction to the forget service and decodes its reply. The
// service's 404 becomes the fact route's own (field id).
func (g *Gateway) changeFact(r *http.Request, tenant string, req events.ForgetRequest) (events.ForgetReply, *Problem) {
	var reply events.ForgetReply
	subject, err := events.ForgetSubject(tenant)
	if err != nil {
		return reply, invalid(err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return reply, problem(http.StatusInternalServerError, "", err.Error())
	}
	msg, p := g.call(r, subject, body, 0, "agentmem-extractor", 0)
	if p != nil {
		if p.Status == http.StatusNotFound {
			p = noFact(tenant, req.User, req.FactID)
		}
		return reply, p
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return reply, problem(http.StatusBadGateway, "", "the forget service's reply is not JSON: "+err.Error())
	}
	return reply, nil
}
