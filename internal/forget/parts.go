package forget

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/events"
)

// User is whose memory a pass of Forget removes.
type User struct {
	Tenant, User string
	// Sessions are the user's sessions the long-term index names, those another user owns left
	// out.
	Sessions []string
}

// Part is one store's (or stage's) share of forgetting a user: Forget removes what it keeps of
// u and of u's sessions, history included, and adds how many it removed to counts under the
// reply's names (events.ForgetReply: "turns", "facts", "vectors", …); what it does not count it
// leaves out. It is called twice per forget, and must find nothing to remove the second time
// unless something was written meanwhile.
type Part interface {
	Forget(ctx context.Context, u User, counts map[string]int) error
}

// sessionPart is the session store's: the sessions' tombstones and chunks ("sessions": how many
// had chunks).
type sessionPart struct{ st *session.Store }

func (p sessionPart) Forget(ctx context.Context, u User, counts map[string]int) error {
	n, err := p.st.Forget(ctx, u.Tenant, u.Sessions)
	counts["sessions"] += n
	return err
}

// streamPart is the archive's: each session's messages in the turns, summary, pressure and dead
// letter streams, its end announcements and its compressions' LLM answers (memo bucket), then the
// user's fact events and the records of the user's edits.
type streamPart struct {
	js   jetstream.JetStream
	topo events.Topology
}

func (p streamPart) Forget(ctx context.Context, u User, counts map[string]int) error {
	topo := p.topo
	for _, sess := range u.Sessions {
		for _, s := range []struct{ name, stream, subject string }{
			{"turns", topo.TurnsStream(), events.SessionFilter(u.Tenant, sess)},
			{"summary_events", topo.SummaryStream(), "*.memory.summaries." + u.Tenant + "." + sess},
			{"pressure_events", topo.PressureStream(), "memory.pressure." + u.Tenant + "." + sess},
			{"dead_letters", topo.DeadLetterStream(), "memory.dlq." + u.Tenant + "." + sess},
		} {
			n, err := archive.Purge(ctx, p.js, s.stream, s.subject)
			if err != nil {
				return err
			}
			counts[s.name] += int(n)
		}
		// Ingest's announcements of the session's ends (ids and sequences; not counted). A
		// session name that is not a subject token was never announced.
		if ended, err := events.EndedSubject(u.Tenant, sess); err == nil {
			if _, err := archive.Purge(ctx, p.js, topo.TurnsStream(), ended); err != nil {
				return err
			}
		}
		// LLM answers of a compression of the session still in progress, or never finished.
		if _, err := archive.PurgeKV(ctx, p.js, topo.MemoBucket(), u.Tenant+"."+sess+".>"); err != nil {
			return err
		}
	}
	subject, _ := events.FactSubject(u.Tenant, u.User)
	n, err := archive.Purge(ctx, p.js, topo.FactStream(), subject)
	if err != nil {
		return err
	}
	counts["fact_events"] += int(n)
	// The records of the user's edits of their facts (not counted).
	if edits, err := events.EditSubject(u.Tenant, u.User); err == nil {
		if _, err := archive.Purge(ctx, p.js, topo.TurnsStream(), edits); err != nil {
			return err
		}
	}
	return nil
}

// viewPart is the retriever's stored view of the user (package retrieve, snapshot.go), which
// holds the text of the user's turns (not counted: a copy of the turns). A topology made before
// the view bucket existed has nothing to remove.
type viewPart struct {
	js   jetstream.JetStream
	topo events.Topology
}

func (p viewPart) Forget(ctx context.Context, u User, _ map[string]int) error {
	_, err := archive.PurgeKV(ctx, p.js, p.topo.ViewBucket(), u.Tenant+"."+u.User)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	return err
}

// usagePart is the usage store's: the sessions' counters (not counted).
type usagePart struct{ st *usage.Store }

func (p usagePart) Forget(ctx context.Context, u User, _ map[string]int) error {
	return p.st.Forget(ctx, u.Tenant, u.Sessions)
}

// longPart is the long-term store's: the user's facts, summaries, session index and graph
// ("facts", "summaries", "entities" and "relations": how many there were, history included).
type longPart struct{ st *longterm.Store }

func (p longPart) Forget(ctx context.Context, u User, counts map[string]int) error {
	recs, err := p.st.User(ctx, u.Tenant, u.User)
	if err != nil {
		return err
	}
	counts["facts"] += len(recs.Facts)
	counts["summaries"] += len(recs.Summaries)
	if len(recs.Entities)+len(recs.Edges) > 0 {
		counts["entities"] += len(recs.Entities)
		counts["relations"] += len(recs.Edges)
	}
	_, err = p.st.Forget(ctx, u.Tenant, u.User)
	return err
}

// vectorPart is the vector store's: the user's vectors of every model ("vectors").
type vectorPart struct{ st *vectors.Store }

func (p vectorPart) Forget(ctx context.Context, u User, counts map[string]int) error {
	n, err := p.st.Forget(ctx, u.Tenant, u.User)
	if err != nil {
		return err
	}
	counts["vectors"] += int(n)
	return nil
}
