package deadletter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/pkg/events"
)

// HeaderClass is the header a record carries its Class in (records written by earlier builds
// have none).
const HeaderClass = "Agentmem-Class"

// MaxFindScan bounds how many of a session's dead letters Find looks through (after the newest,
// which it reads first): a session with more finds only the event ids among the oldest
// MaxFindScan and the newest.
const MaxFindScan = 10000

// Letter is a stored dead letter: where it is in the dead-letter stream, whose it is, the
// CloudEvent id of the message it keeps and the record itself.
type Letter struct {
	// Seq is the record's sequence in the dead-letter stream.
	Seq uint64
	// Tenant and Session come from the record's subject (both empty for memory.dlq._).
	Tenant, Session string
	// EventID is the CloudEvent id of the kept message ("" when it has none or it cannot be
	// read).
	EventID string
	// Class is the reason's class (HeaderClass), "" when the record does not say.
	Class string
	events.DeadLetter
}

// Reader reads dead letters back from the dead-letter stream, with direct gets (no consumer).
type Reader struct {
	js     jetstream.JetStream
	name   string
	reader *archive.Reader

	mu     sync.Mutex
	stream jetstream.Stream // bound on first use
}

// NewReader reads the dead-letter stream of topo through js.
func NewReader(js jetstream.JetStream, topo events.Topology) *Reader {
	name := topo.DeadLetterStream()
	return &Reader{js: js, name: name, reader: archive.NewReader(js, name)}
}

// Find returns the newest dead letter of the tenant's session that keeps the event id, or nil
// when there is none (nor a dead-letter stream). It reads the session's newest record first
// (one direct get: the usual case, a turn just rejected), then looks through the older ones,
// at most MaxFindScan. Only the subject memory.dlq.<tenant>.<session> is read.
func (r *Reader) Find(ctx context.Context, tenant, session, id string) (*Letter, error) {
	if err := events.ValidateToken("tenant", tenant); err != nil {
		return nil, err
	}
	if err := events.ValidateToken("session", session); err != nil {
		return nil, err
	}
	subject := events.DeadLetterSubject(tenant, session)
	s, err := r.bind(ctx)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	last, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", subject, err)
	}
	if l := decode(last); l.EventID == id {
		return &l, nil
	}
	var found *Letter
	n := 0
	errStop := errors.New("stop")
	err = r.reader.Scan(ctx, subject, 1, last.Sequence-1, func(m *jetstream.RawStreamMsg) error {
		if l := decode(m); l.EventID == id {
			found = &l
		}
		if n++; n >= MaxFindScan {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return found, nil
}

// List returns the newest dead letters of the tenant, newest first, at most limit: of one
// session when session is not empty. It reads backwards in growing windows of the stream, so
// it reads about as many records as it returns, however many older ones the stream keeps. Only
// the tenant's subjects are read.
func (r *Reader) List(ctx context.Context, tenant, session string, limit int) ([]Letter, error) {
	if err := events.ValidateToken("tenant", tenant); err != nil {
		return nil, err
	}
	subject := "memory.dlq." + tenant + ".*"
	if session != "" {
		if err := events.ValidateToken("session", session); err != nil {
			return nil, err
		}
		subject = events.DeadLetterSubject(tenant, session)
	}
	out := []Letter{}
	if limit <= 0 {
		return out, nil
	}
	s, err := r.js.Stream(ctx, r.name) // fresh: its state says where the stream ends now
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("binding stream %q: %w", r.name, err)
	}
	state := s.CachedInfo().State
	first, hi := max(state.FirstSeq, 1), state.LastSeq
	for window := uint64(256); hi >= first && len(out) < limit; window *= 2 {
		lo := first
		if hi-first+1 > window {
			lo = hi - window + 1
		}
		// One get says whether the window holds any of the records asked for at all.
		next, err := r.reader.Next(ctx, subject, lo)
		if err != nil {
			return nil, err
		}
		if next != nil && next.Sequence <= hi {
			var batch []Letter
			err := r.reader.Scan(ctx, subject, next.Sequence, hi, func(m *jetstream.RawStreamMsg) error {
				batch = append(batch, decode(m))
				return nil
			})
			if err != nil {
				return nil, err
			}
			for i := len(batch) - 1; i >= 0 && len(out) < limit; i-- {
				out = append(out, batch[i])
			}
		}
		if lo == first {
			break
		}
		hi = lo - 1
	}
	return out, nil
}

// bind returns the stream's handle, looked up once.
func (r *Reader) bind(ctx context.Context) (jetstream.Stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stream != nil {
		return r.stream, nil
	}
	s, err := r.js.Stream(ctx, r.name)
	if err != nil {
		return nil, err
	}
	r.stream = s
	return s, nil
}

// decode reads a stored record; an undecodable one keeps its sequence and subject and says so
// in its reason.
func decode(m *jetstream.RawStreamMsg) Letter {
	l := Letter{Seq: m.Sequence, Class: m.Header.Get(HeaderClass)}
	l.Tenant, l.Session, _ = events.ParseDeadLetterSubject(m.Subject)
	if err := json.Unmarshal(m.Data, &l.DeadLetter); err != nil {
		l.Reason = "undecodable dead letter: " + err.Error()
		return l
	}
	l.EventID = EventID(l.DeadLetter, l.Tenant, l.Session)
	return l
}

// EventID returns the CloudEvent id of the message a record keeps: its ce-id header (binary
// mode) or its body's id (structured mode), else the id its Nats-Msg-Id names
// ("<tenant>.<session>.<id>"); "" when none says, or the message had no id of its own (the
// content hash the admission gives such a message is not an id).
func EventID(dl events.DeadLetter, tenant, session string) string {
	if id, ok := events.EventID(&nats.Msg{Header: nats.Header(dl.Headers), Data: dl.Body}); ok {
		return id
	}
	msgID := nats.Header(dl.Headers).Get(events.HeaderMsgID)
	if id, ok := strings.CutPrefix(msgID, events.MsgID(tenant, session, "")); ok && tenant != "" && !strings.HasPrefix(id, "$noid-") {
		return id
	}
	return ""
}
