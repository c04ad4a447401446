package eval

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

func TestPublishStoresSessionsInOrderOnce(t *testing.T) {
	env := brokertest.Start(t)
	ctx := context.Background()
	topo := events.DefaultTopology()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2023, 5, 1, 10, 0, 0, 0, time.UTC)
	var sessions []Session
	for _, id := range []string{"s1", "s2", "s3"} {
		s := Session{Tenant: "lme", ID: id, User: "u"}
		for i := range 3 {
			s.Turns = append(s.Turns, client.Turn{ID: id + ":" + strconv.Itoa(i), Session: id, User: "u", Role: "user",
				Content: "turn", Time: day.Add(time.Duration(i) * time.Second)})
		}
		sessions = append(sessions, s)
	}
	st, err := publish(ctx, env.NC, sessions, 2, 5*time.Second, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if st.Turns != 9 || st.Ends != 3 || st.Duplicates != 0 || st.Retried != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Each session's turns are stored in order, then its end.
	stream, err := env.JS.Stream(ctx, topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{}
	for seq := uint64(1); seq <= 12; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		addr, err := events.ParseTurnSubject(m.Subject)
		if err != nil {
			t.Fatal(err)
		}
		seen[addr.Session] = append(seen[addr.Session], m.Header.Get("ce-type")+" "+m.Header.Get("ce-id"))
		if m.Header.Get("ce-type") == events.TypeTurn && m.Header.Get(events.HeaderMsgID) != events.MsgID("lme", addr.Session, m.Header.Get("ce-id")) {
			t.Errorf("Nats-Msg-Id %q", m.Header.Get(events.HeaderMsgID))
		}
	}
	for _, s := range sessions {
		got := seen[s.ID]
		if len(got) != 4 || !strings.HasPrefix(got[3], events.TypeSessionEnded) {
			t.Fatalf("session %s stored %q", s.ID, got)
		}
		for i, turn := range s.Turns {
			if got[i] != events.TypeTurn+" "+turn.ID {
				t.Errorf("session %s message %d is %q, want turn %s", s.ID, i, got[i], turn.ID)
			}
		}
	}

	// Again: the turns are stored already.
	st, err = publish(ctx, env.NC, sessions, 2, 5*time.Second, zerolog.Nop())
	if err != nil || st.Duplicates != 9 {
		t.Fatalf("second publish: %+v, %v", st, err)
	}

	// Bad input fails at once, without retries.
	bad := []Session{{Tenant: "lme", ID: "s4", User: "u", Turns: []client.Turn{{ID: "x", Session: "s4", User: "u", Role: "user", Content: " "}}}}
	st, err = publish(ctx, env.NC, bad, 2, 5*time.Second, zerolog.Nop())
	if !errors.Is(err, events.ErrInvalid) || st.Retried != 0 {
		t.Fatalf("blank turn: %+v, %v", st, err)
	}
}
