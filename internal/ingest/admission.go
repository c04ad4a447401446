package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/reply"
	"github.com/agentmem/agentmem/pkg/events"
)

// Admission.
//
// With authentication on, agents live in accounts of their own and their memory.turns.<t>.<s>
// arrives in the service account as memory.intake.<t>.<s> (package auth). No stream captures the
// intake, so nothing an agent sends reaches JetStream as it was sent: ingest admits it.
//
//   - The deduplication id is derived: Nats-Msg-Id = <t>.<s>.<event id>, from the subject's
//     tenant and session, the only ones the agent's account can name. A Nats-Msg-Id the agent set
//     must be that value (else the turn is refused and dead-lettered, as ingest always did), and
//     an event id in agentmem's reserved space (events.ReservedIDPrefix) is refused, so no tenant
//     can take another tenant's ids or the ids ingest derives itself (an idle session's end).
//   - Every Nats-* header the agent set (Nats-Expected-*, Nats-Rollup, Nats-TTL, Nats-Msg-Id, …)
//     is dropped: the agent cannot ask JetStream questions about other subjects or act on them.
//   - The turn is stored on memory.turns.<t>.<s> (the turns stream; only the service account
//     can publish there), and the agent gets the stream's acknowledgement (the PubAck JSON, or a
//     JetStream-style error) on its reply subject once the turn is stored, so any NATS client's
//     JetStream publish works unchanged. The reply subject is checked (package reply): one that
//     is not an inbox of the requester is neither stored nor answered.
//   - A message without an event id is stored under an id derived from its content: ingest
//     dead-letters it with the reason, as it does any bad input.
//
// Order and replicas: every ingest process subscribes to the whole intake (no queue group) and
// admits every turn, in arrival order, through one publisher. A session's turns from one
// connection therefore reach the stream in the order they were sent, whichever process's copy
// is stored first: a process publishes a turn only after the turns sent before it, so when any
// copy of a turn is stored, the earlier turns are stored already. The copies of the other
// processes are duplicates of the derived id (the stream stores one); the agent takes the first
// answer. There is no ownership to hand over, so no turn waits for a rebalance or is dropped
// during one. The price is one intake delivery and one publish per ingest process per turn.
//
// The order holds among processes that each received the session's earlier turns. A process
// that subscribes (starts, or reconnects) while a session's turns are in flight has not seen
// the earlier ones: the first turn it receives can reach the stream before earlier turns that
// another process still holds unpublished. Nothing is lost or stored twice, but that turn lands
// out of order (a known limitation, found by TestAdmissionKeepsOrderWithTwoProcesses when its
// second process joined during the burst).

// admissionMaxPending bounds the turns admitted and not yet acknowledged by the stream.
const admissionMaxPending = 4096

// admission outcomes (metrics).
const (
	admitStored   = "stored"
	admitRejected = "rejected"
	admitRefused  = "refused"
	admitFailed   = "failed"
)

type admission struct {
	w    *Worker
	nc   *nats.Conn
	js   jetstream.JetStream
	acks chan admitted
	dlq  chan struct{} // bounds dead-letter writes in flight
	wg   sync.WaitGroup
}

// admitted is a turn waiting for the stream's acknowledgement.
type admitted struct {
	reply string
	fut   jetstream.PubAckFuture
}

// pubAckReply is what JetStream answers a publish with; admission answers the same.
type pubAckReply struct {
	Stream    string    `json:"stream,omitempty"`
	Sequence  uint64    `json:"seq,omitempty"`
	Duplicate bool      `json:"duplicate,omitempty"`
	Domain    string    `json:"domain,omitempty"`
	Error     *apiError `json:"error,omitempty"`
}

type apiError struct {
	Code        int    `json:"code"`
	ErrorCode   uint16 `json:"err_code,omitempty"`
	Description string `json:"description"`
}

// runAdmission admits turns from the intake until ctx is cancelled; then it drains the
// subscription and waits until every admitted turn is stored and answered.
func (w *Worker) runAdmission(ctx context.Context) error {
	nc := w.js.Conn()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(admissionMaxPending))
	if err != nil {
		return err
	}
	a := &admission{w: w, nc: nc, js: js, acks: make(chan admitted, admissionMaxPending), dlq: make(chan struct{}, 64)}
	a.wg.Add(1)
	go a.answer()
	sub, err := nc.Subscribe(events.IntakeSubjects, a.admit)
	if err != nil {
		close(a.acks)
		a.wg.Wait()
		return fmt.Errorf("subscribing to the intake: %w", err)
	}
	_ = sub.SetPendingLimits(256<<10, 256<<20)
	if err := nc.Flush(); err != nil {
		w.log.Debug().Err(err).Msg("flushing the intake subscription")
	}
	<-ctx.Done()
	// Drain: the messages already received are admitted and answered before Run returns.
	if err := sub.Drain(); err != nil {
		_ = sub.Unsubscribe()
	}
	deadline := time.Now().Add(30 * time.Second)
	for sub.IsValid() && !nc.IsClosed() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if sub.IsValid() {
		_ = sub.Unsubscribe()
		w.log.Warn().Msg("intake not drained in 30s")
	}
	close(a.acks)
	a.wg.Wait()
	return nil
}

// admit handles one intake message (the subscription's callback: one at a time, in order).
func (a *admission) admit(m *nats.Msg) {
	tenant, session, err := events.ParseIntakeSubject(m.Subject)
	if err != nil {
		// Only a client of the service's own account can publish such a subject.
		a.w.cfg.Metrics.Admission(admitRejected)
		if reply.Check("", m.Reply) == nil {
			a.respondError(m.Reply, 400, err.Error())
		}
		return
	}
	if m.Reply != "" {
		if err := reply.Check(tenant, m.Reply); err != nil {
			a.w.cfg.Metrics.Refused("admission")
			a.w.cfg.Metrics.Admission(admitRefused)
			a.w.log.Debug().Err(err).Str("subject", m.Subject).Msg("turn refused")
			return
		}
	}
	subject, _ := events.TurnSubject(tenant, session)
	id, hasID := events.EventID(m)
	if hasID {
		want := events.MsgID(tenant, session, id)
		if events.IsReserved(id) {
			a.reject(m, tenant, session, fmt.Sprintf("event id %q: ids starting with %q are reserved for agentmem's own events", id, events.ReservedIDPrefix), deadletter.ClassInvalid)
			return
		}
		if got := m.Header.Get(events.HeaderMsgID); got != "" && got != want {
			a.reject(m, tenant, session, fmt.Sprintf("Nats-Msg-Id %q does not match the subject and ce-id: want %q", got, want), deadletter.ClassMsgID)
			return
		}
	}
	out := &nats.Msg{Subject: subject, Data: m.Data, Header: nats.Header{}}
	for k, v := range m.Header {
		out.Header[k] = v
	}
	events.StripNATSHeaders(out.Header)
	if hasID {
		out.Header.Set(events.HeaderMsgID, events.MsgID(tenant, session, id))
	} else {
		// No id: ingest dead-letters it; the content's hash keeps the copies of several ingest
		// processes (and a retry) to one dead letter.
		out.Header.Set(events.HeaderMsgID, events.MsgID(tenant, session, "$noid-"+contentHash(out)))
	}
	if len(out.Header) == 0 {
		out.Header = nil
	}
	fut, err := a.js.PublishMsgAsync(out)
	if err != nil {
		a.w.cfg.Metrics.Admission(admitFailed)
		a.respondError(m.Reply, 503, "storing the turn: "+err.Error())
		return
	}
	a.acks <- admitted{reply: m.Reply, fut: fut}
}

// answer answers every admitted turn, in order, once the stream acknowledged or refused it.
func (a *admission) answer() {
	defer a.wg.Done()
	for p := range a.acks {
		select {
		case ack := <-p.fut.Ok():
			a.w.cfg.Metrics.Admission(admitStored)
			if p.reply != "" {
				a.respond(p.reply, pubAckReply{Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate, Domain: ack.Domain})
			}
		case err := <-p.fut.Err():
			a.w.cfg.Metrics.Admission(admitFailed)
			code, desc := 503, "storing the turn: "+err.Error()
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.Code != 0 {
				code, desc = apiErr.Code, apiErr.Description
			}
			a.w.log.Debug().Err(err).Msg("admitting a turn")
			a.respondError(p.reply, code, desc)
		}
	}
}

// reject refuses a turn for good: a dead letter with the reason, and the reason to the agent.
func (a *admission) reject(m *nats.Msg, tenant, session, reason, class string) {
	a.w.cfg.Metrics.Admission(admitRejected)
	a.respondError(m.Reply, 400, reason)
	rec := deadletter.Record{Msg: m, Subject: "memory.turns." + tenant + "." + session, Tenant: tenant, Session: session,
		Consumer: "admission", Reason: reason, Class: class, Key: "admission." + contentHash(m)}
	a.dlq <- struct{}{}
	a.wg.Add(1)
	go func() {
		defer func() { <-a.dlq; a.wg.Done() }()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := a.w.dlq.Write(ctx, rec); err != nil {
			a.w.log.Warn().Err(err).Str("subject", m.Subject).Msg("writing the dead letter of a refused turn")
		}
	}()
}

func (a *admission) respond(to string, v pubAckReply) {
	data, err := json.Marshal(v)
	if err == nil {
		err = a.nc.Publish(to, data)
	}
	if err != nil {
		a.w.log.Debug().Err(err).Msg("answering an admitted turn")
	}
}

func (a *admission) respondError(to string, code int, desc string) {
	if to == "" {
		return
	}
	a.respond(to, pubAckReply{Error: &apiError{Code: code, ErrorCode: 10000 + uint16(code), Description: desc}})
}

// contentHash is a hex SHA-256 of a message's headers (sorted) and body.
func contentHash(m *nats.Msg) string {
	h := sha256.New()
	keys := make([]string, 0, len(m.Header))
	for k := range m.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range m.Header[k] {
			fmt.Fprintf(h, "%s: %s\n", k, v)
		}
	}
	h.Write(m.Data)
	return hex.EncodeToString(h.Sum(nil)[:16])
}
