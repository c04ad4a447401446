package deadletter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/pkg/events"
)

// turnMsg is a turn of tenant and session in binary mode (structured when structured is set).
func turnMsg(tenant, session, id string, structured bool) *nats.Msg {
	m := nats.NewMsg("memory.turns." + tenant + "." + session)
	if structured {
		m.Header.Set("content-type", events.ContentTypeStructured)
		m.Data = []byte(`{"specversion":"1.0","id":"` + id + `","type":"agentmem.turn.v1","source":"t","data":{"role":"user","content":"x"}}`)
	} else {
		m.Header.Set("ce-id", id)
		m.Data = []byte(`{"role":"user","content":"x"}`)
	}
	m.Header.Set(events.HeaderMsgID, events.MsgID(tenant, session, id))
	return m
}

// Find returns a session's record of an event id, the newest first read and older ones
// scanned; List returns a tenant's records newest first, across windows of the stream, and
// neither ever returns another tenant's.
func TestReader(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo := events.DefaultTopology()
	cfgs := topo.StreamConfigs()
	if _, err := env.JS.CreateStream(ctx, cfgs[len(cfgs)-1]); err != nil {
		t.Fatal(err)
	}
	w := deadletter.NewWriter(env.JS, 0)
	write := func(tenant, session, id string, structured bool, seq uint64) {
		t.Helper()
		err := w.Write(ctx, deadletter.Record{Msg: turnMsg(tenant, session, id, structured), Tenant: tenant, Session: session,
			Stream: "TURNS", Seq: seq, Reason: "bad " + id, Class: deadletter.ClassInvalid})
		if err != nil {
			t.Fatal(err)
		}
	}
	// acme's records of s1 and s2 among many of globex's, which fill several windows.
	seq := uint64(0)
	for i := range 1200 {
		seq++
		switch {
		case i%300 == 0:
			write("acme", "s1", fmt.Sprintf("a%d", i), i%600 == 0, seq)
		case i == 1199:
			write("acme", "s2", "last", false, seq)
		default:
			write("globex", "s1", fmt.Sprintf("g%d", i), false, seq)
		}
	}
	r := deadletter.NewReader(env.JS, topo)

	for _, tc := range []struct{ tenant, session, id, want string }{
		{"acme", "s1", "a0", "bad a0"},     // the oldest: scanned, structured mode
		{"acme", "s1", "a900", "bad a900"}, // the newest of the session: one get
		{"acme", "s2", "last", "bad last"},
		{"acme", "s1", "g5", ""},   // globex's id, asked of acme
		{"globex", "s1", "a0", ""}, // acme's id, asked of globex
		{"acme", "s3", "a0", ""},   // no such session
	} {
		l, err := r.Find(ctx, tc.tenant, tc.session, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if l != nil {
			got = l.Reason
			if l.EventID != tc.id || l.Tenant != tc.tenant || l.Session != tc.session || l.Class != deadletter.ClassInvalid {
				t.Fatalf("find %+v: letter %+v", tc, l)
			}
		}
		if got != tc.want {
			t.Errorf("find %s/%s/%s: %q, want %q", tc.tenant, tc.session, tc.id, got, tc.want)
		}
	}

	list := func(tenant, session string, limit int) string {
		t.Helper()
		ls, err := r.List(ctx, tenant, session, limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range ls {
			if l.Tenant != tenant {
				t.Fatalf("list of %s holds %+v", tenant, l)
			}
			ids = append(ids, l.EventID)
		}
		return strings.Join(ids, " ")
	}
	for _, tc := range []struct {
		tenant, session string
		limit           int
		want            string
	}{
		{"acme", "", 10, "last a900 a600 a300 a0"},
		{"acme", "", 2, "last a900"},
		{"acme", "s1", 10, "a900 a600 a300 a0"},
		{"acme", "s9", 10, ""},
		{"initech", "", 10, ""},
		{"acme", "", 0, ""},
	} {
		if got := list(tc.tenant, tc.session, tc.limit); got != tc.want {
			t.Errorf("list %s %q %d: %q, want %q", tc.tenant, tc.session, tc.limit, got, tc.want)
		}
	}
	if got := list("globex", "", 1000); len(strings.Fields(got)) != 1000 || !strings.HasPrefix(got, "g1198 g1197") {
		t.Errorf("globex's newest 1000: %d, starting %.20q", len(strings.Fields(got)), got)
	}
}
