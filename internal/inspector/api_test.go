package inspector_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/inspector"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

func TestTenantsAndSessions(t *testing.T) {
	e := start(t, inspector.Config{})
	at := time.Now().Add(-time.Minute)
	e.turn(t, "acme", "s1", "alice", "a1", "user", "hello from alice", at)
	e.turn(t, "acme", "s2", "bob", "b1", "user", "hello from bob", at)
	e.turn(t, "acme", "s2", "bob", "b2", "assistant", "hi bob", at.Add(time.Second))
	e.turn(t, "beta", "s1", "carol", "c1", "user", "hello from carol", at)

	var tenants struct{ Tenants []inspector.TenantInfo }
	if code := e.get(t, "/api/tenants", &tenants); code != http.StatusOK {
		t.Fatalf("GET /api/tenants: %d", code)
	}
	if len(tenants.Tenants) != 2 || tenants.Tenants[0].Tenant != "acme" || tenants.Tenants[1].Tenant != "beta" {
		t.Fatalf("tenants %+v, want acme and beta", tenants.Tenants)
	}
	if a := tenants.Tenants[0]; a.Sessions != 2 || a.Turns != 3 || !slices.Equal(a.Users, []string{"alice", "bob"}) {
		t.Fatalf("acme %+v, want 2 sessions, 3 turns, users alice and bob", a)
	}

	var sessions struct {
		Tenant   string
		Sessions []inspector.SessionInfo
		Users    []string
	}
	if code := e.get(t, "/api/tenants/acme/sessions", &sessions); code != http.StatusOK {
		t.Fatalf("GET sessions: %d", code)
	}
	if len(sessions.Sessions) != 2 || !slices.Equal(sessions.Users, []string{"alice", "bob"}) {
		t.Fatalf("acme sessions %+v users %v", sessions.Sessions, sessions.Users)
	}
	// Most recently active first: s2's last turn is a second later.
	if s := sessions.Sessions[0]; s.Session != "s2" || s.User != "bob" || s.Turns != 2 || s.Budget != budgetTokens {
		t.Fatalf("first session %+v, want s2 of bob with 2 turns and budget %d", s, budgetTokens)
	}
	if code := e.get(t, "/api/tenants/nobody/sessions", &sessions); code != http.StatusOK || len(sessions.Sessions) != 0 {
		t.Fatalf("a tenant without sessions: %d, %+v", code, sessions.Sessions)
	}
}

func TestSessionDetailFollowsPressureAndSummary(t *testing.T) {
	e := start(t, inspector.Config{})
	s := newScript(t, "acme", "s1", "alice")
	s.below(t, e)

	var d inspector.SessionDetail
	if code := e.get(t, "/api/tenants/acme/sessions/s1", &d); code != http.StatusOK {
		t.Fatalf("GET session: %d", code)
	}
	g := d.Gauge
	if g.Tokens != 600 || g.Budget != budgetTokens || g.Ratio != 0.6 || g.Threshold != 800 || g.ThresholdRatio != 0.8 || g.State != "ok" {
		t.Fatalf("gauge before the crossing %+v, want 600/1000 = 0.6, threshold 800 (0.8), ok", g)
	}
	if len(d.Entries) != 4 || len(d.Pending) != 0 || len(d.Summaries) != 0 || len(d.Pressure) != 0 {
		t.Fatalf("before: %d entries, %d pending, %d summaries, %d pressure events", len(d.Entries), len(d.Pending), len(d.Summaries), len(d.Pressure))
	}
	for i, id := range []string{"t1", "t2", "t3", "t4"} {
		en := d.Entries[i]
		if en.ID != id || en.Content != s.texts[id] || en.Tokens != smallTokens || en.Type != memory.Conversation || en.Timestamp.IsZero() {
			t.Fatalf("entry %d: %+v, want %s with its text and %d tokens", i, en, id, smallTokens)
		}
	}
	if d.Entries[1].Role != "assistant" {
		t.Fatalf("t2's role is %q", d.Entries[1].Role)
	}

	s.cross(t, e)
	if code := e.get(t, "/api/tenants/acme/sessions/s1", &d); code != http.StatusOK {
		t.Fatalf("GET session: %d", code)
	}
	if g := d.Gauge; g.Tokens != 850 || g.Ratio != 0.85 || g.State != "pressure" || !g.Above || g.Pressures != 1 {
		t.Fatalf("gauge after the crossing %+v, want 850/1000 = 0.85, pressure", g)
	}
	if len(d.Pressure) != 1 || d.Pressure[0].Number != 1 || d.Pressure[0].Tokens != 900 || d.Pressure[0].Ratio != 0.9 ||
		!slices.Equal(d.Pressure[0].EntryIDs, []string{"t1", "t2", "t3", "t4"}) {
		t.Fatalf("pressure events %+v, want #1 at 900 tokens naming t1-t4", d.Pressure)
	}
	if len(d.Entries) != 2 || d.Entries[0].Type != memory.Summary || d.Entries[1].ID != "t5" || d.Entries[1].Content != s.texts["t5"] {
		t.Fatalf("kept entries after the crossing: %+v, want the summary then t5", d.Entries)
	}
	// The compressor (extractive, offline) answers soon; the summary then lists the turns it replaced.
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		e.get(t, "/api/tenants/acme/sessions/s1", &d)
		if len(d.Summaries) != 1 || d.Summaries[0].Status != "applied" {
			return fmt.Errorf("summaries %+v, want one applied", d.Summaries)
		}
		return nil
	})
	sum := d.Summaries[0]
	if sum.ID != d.Pressure[0].SummaryID || sum.Content == "" || sum.Tokens != 100 || sum.Summarizer != "extractive" {
		t.Fatalf("summary %+v, want %s with text, 100 tokens, extractive", sum, d.Pressure[0].SummaryID)
	}
	if len(sum.Replaced) != 4 {
		t.Fatalf("the summary replaced %+v, want t1-t4", sum.Replaced)
	}
	for i, id := range []string{"t1", "t2", "t3", "t4"} {
		if r := sum.Replaced[i]; r.ID != id || r.Content != s.texts[id] {
			t.Fatalf("replaced %d: %+v, want %s with its text", i, r, id)
		}
	}
	if !slices.Equal(sum.Provenance, []string{"t1", "t2", "t3", "t4"}) {
		t.Fatalf("provenance %v", sum.Provenance)
	}
	if d.Gauge.State != "pressure" || d.Gauge.Summaries != 1 || d.Session.Turns != 5 {
		t.Fatalf("after the summary: gauge %+v, session %+v", d.Gauge, d.Session)
	}

	var nf struct{ Error events.ErrorDetail }
	if code := e.get(t, "/api/tenants/acme/sessions/nope", &nf); code != http.StatusNotFound || nf.Error.Field != "session" {
		t.Fatalf("unknown session: %d %+v", code, nf)
	}
}

func TestEventStreamDeliversPressure(t *testing.T) {
	e := start(t, inspector.Config{})
	s := newScript(t, "acme", "s1", "alice")
	s.below(t, e)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/api/tenants/acme/events", nil)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("events: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	type sse struct{ id, event, data string }
	got := make(chan sse, 16)
	readErr := make(chan error, 1)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(res.Body)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.event != "" {
					got <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, "event: "):
				cur.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				cur.data = strings.TrimPrefix(line, "data: ")
			case strings.HasPrefix(line, "id: "):
				cur.id = strings.TrimPrefix(line, "id: ")
			}
		}
		readErr <- sc.Err()
	}()
	next := func(kind string) sse {
		t.Helper()
		for {
			select {
			case ev, ok := <-got:
				if !ok {
					t.Fatalf("the stream ended before a %s event: %v", kind, <-readErr)
				}
				if ev.event == kind {
					return ev
				}
			case <-ctx.Done():
				t.Fatalf("no %s event: %v", kind, ctx.Err())
			}
		}
	}
	next("ready")
	s.cross(t, e)
	ev := next("pressure")
	var fe struct {
		inspector.FeedEvent
		Data events.Pressure `json:"data"`
	}
	if err := json.Unmarshal([]byte(ev.data), &fe); err != nil {
		t.Fatalf("decoding %q: %v", ev.data, err)
	}
	if fe.Kind != "pressure" || fe.Tenant != "acme" || fe.Session != "s1" || fe.Type != events.TypePressure ||
		fe.Data.Number != 1 || fe.Data.Ratio != 0.9 || fe.Data.Budget != budgetTokens || ev.id != fe.ID || !strings.HasPrefix(fe.ID, "pressure-1-") {
		t.Fatalf("pressure event %+v (id %q)", fe, ev.id)
	}
	sum := next("summary")
	if !strings.Contains(sum.data, `"session":"s1"`) {
		t.Fatalf("summary event %s", sum.data)
	}
	cancel()
}

func TestFactsShowTheirHistory(t *testing.T) {
	e := start(t, inspector.Config{})
	t0 := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	e.turn(t, "acme", "paris", "alice", "p1", "user", "I live in Paris.", t0)
	e.end(t, "acme", "paris", "alice")
	week := t0.Add(24 * time.Hour)
	e.turn(t, "acme", "berlin", "alice", "b1", "user", "I moved to Berlin.", week)
	e.end(t, "acme", "berlin", "alice")

	var f inspector.UserFacts
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if code := e.get(t, "/api/tenants/acme/users/alice/facts", &f); code != http.StatusOK {
			return fmt.Errorf("GET facts: %d", code)
		}
		if len(f.Facts) != 2 || f.Facts[1].Status != "superseded" {
			return fmt.Errorf("facts %+v, want Berlin and the superseded Paris", f.Facts)
		}
		return nil
	})
	berlin, paris := f.Facts[0], f.Facts[1]
	if berlin.Status != "live" || !strings.Contains(berlin.Content, "Berlin") || berlin.Key != "user.city" {
		t.Fatalf("newest fact %+v, want Berlin, live", berlin)
	}
	if !strings.Contains(paris.Content, "Paris") || paris.ValidTo == nil || !paris.ValidTo.Equal(week) || paris.SupersededBy != berlin.ID {
		t.Fatalf("older fact %+v, want Paris valid until %s, superseded by %s", paris, week, berlin.ID)
	}
	if len(f.Histories) != 1 || f.Histories[0].Key != "user.city" || f.Histories[0].Live != berlin.ID || len(f.Histories[0].Versions) != 2 {
		t.Fatalf("histories %+v, want user.city with both versions, Berlin live", f.Histories)
	}
	if !slices.Equal(paris.Provenance, []string{"p1"}) {
		t.Fatalf("Paris provenance %v", paris.Provenance)
	}
	if refs := f.Turns["p1"]; len(refs) != 1 || refs[0].Session != "paris" || refs[0].Content != "I live in Paris." {
		t.Fatalf("provenance turn p1: %+v", refs)
	}
	if refs := f.Turns["b1"]; len(refs) != 1 || refs[0].Session != "berlin" || refs[0].Content != "I moved to Berlin." {
		t.Fatalf("provenance turn b1: %+v", refs)
	}
	if len(f.Sessions) != 2 {
		t.Fatalf("sessions %+v", f.Sessions)
	}
	if code := e.get(t, "/api/tenants/acme/users/nobody/facts", &f); code != http.StatusOK || len(f.Facts) != 0 {
		t.Fatalf("an unknown user: %d %+v", code, f)
	}
}

func TestSearchShowsScoresAndContext(t *testing.T) {
	e := start(t, inspector.Config{})
	at := time.Now().Add(-time.Minute)
	e.turn(t, "acme", "s1", "alice", "t1", "user", "I love writing Go, it's my favourite language", at)
	e.turn(t, "acme", "s1", "alice", "t2", "assistant", "Noted: Go it is.", at.Add(time.Second))
	zh := "我最喜欢的编程语言是 Go"
	e.turn(t, "acme", "s1", "alice", "t3", "user", zh, at.Add(2*time.Second))

	var r inspector.SearchResult
	if code := e.get(t, "/api/tenants/acme/search?q="+url.QueryEscape("我最喜欢的编程语言是什么？")+"&session=s1&limit=5", &r); code != http.StatusOK {
		t.Fatalf("search: %d", code)
	}
	if len(r.Entries) == 0 || r.Entries[0].ID != "t3" || r.Entries[0].Content != zh {
		t.Fatalf("entries %+v, want t3 (%q) first", r.Entries, zh)
	}
	top := r.Entries[0]
	if top.Scores.Keyword <= 0 || top.Scores.Decay <= 0 || top.Scores.Weight != 1 || top.Source != "short" || top.Score <= 0 {
		t.Fatalf("scores of the top entry %+v", top)
	}
	if !strings.Contains(r.Context, zh) || r.ContextTokens == 0 {
		t.Fatalf("context %q (%d tokens), want it to hold %q", r.Context, r.ContextTokens, zh)
	}
	if r.Request.Query != "我最喜欢的编程语言是什么？" || r.Request.Session != "s1" || *r.Request.Limit != 5 {
		t.Fatalf("request %+v", r.Request)
	}

	for _, c := range []struct{ query, field string }{
		{"session=s1", "q"},
		{"q=go&limit=x", "limit"},
		{"q=go&limit=0", "limit"},
		{"q=go&session=a.b", "session"},
		{"q=go&sources=short", "sources"},
		{"q=go&session=s1&types=NOPE", "types"},
	} {
		var er struct{ Error events.ErrorDetail }
		if code := e.get(t, "/api/tenants/acme/search?"+c.query, &er); code != http.StatusBadRequest || er.Error.Field != c.field {
			t.Errorf("search?%s: %d %+v, want 400 on %s", c.query, code, er, c.field)
		}
	}
}

func TestUsageReport(t *testing.T) {
	e := start(t, inspector.Config{Tenants: []string{"acme"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, _ := jetstream.New(e.nc)
	us, err := usage.Open(ctx, js, events.DefaultTopology())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		tenant, session string
		usage           memory.Usage
	}{
		{"acme", "s1", memory.Usage{Calls: 3, InputTokens: 1200, OutputTokens: 150}},
		{"acme", "s2", memory.Usage{Calls: 1, InputTokens: 400, OutputTokens: 50}},
		{"beta", "s1", memory.Usage{Calls: 7, InputTokens: 9000, OutputTokens: 900}},
	} {
		if err := us.Add(ctx, u.tenant, u.session, u.usage); err != nil {
			t.Fatal(err)
		}
	}
	var rep memory.UsageReport
	if code := e.get(t, "/api/usage", &rep); code != http.StatusOK {
		t.Fatalf("usage: %d", code)
	}
	// beta is not in the allow-list.
	want := memory.Usage{Calls: 4, InputTokens: 1600, OutputTokens: 200}
	if len(rep.Tenants) != 1 || rep.Tenants[0].Tenant != "acme" || rep.Total != want || len(rep.Tenants[0].Sessions) != 2 {
		t.Fatalf("report %+v, want acme alone with %+v", rep, want)
	}
	if code := e.get(t, "/api/tenants/acme/usage", &rep); code != http.StatusOK || rep.Total != want || rep.Tenants[0].Sessions[0].Usage.Calls != 3 {
		t.Fatalf("acme usage: %d %+v", code, rep)
	}
	var er struct{ Error events.ErrorDetail }
	if code := e.get(t, "/api/tenants/beta/usage", &er); code != http.StatusNotFound || er.Error.Field != "tenant" {
		t.Fatalf("a tenant outside the allow-list: %d %+v", code, er)
	}
}

func TestBadPathTokens(t *testing.T) {
	e := start(t, inspector.Config{})
	long := strings.Repeat("x", 65)
	for _, c := range []struct{ path, field string }{
		{"/api/tenants/a.b/sessions", "tenant"},
		{"/api/tenants/a%20b/sessions", "tenant"},
		{"/api/tenants/" + long + "/sessions", "tenant"},
		{"/api/tenants/%E6%B5%8B/sessions", "tenant"},
		{"/api/tenants/acme/sessions/s.1", "session"},
		{"/api/tenants/acme/sessions/s%2A", "session"},
		{"/api/tenants/a*/sessions/s1", "tenant"},
		{"/api/tenants/acme/users/u.1/facts", "user"},
		{"/api/tenants/acme/users/" + long + "/facts", "user"},
		{"/api/tenants/a%3Eb/usage", "tenant"},
		{"/api/tenants/a.%3E/search?q=x", "tenant"},
		{"/api/tenants/a.b/events", "tenant"},
	} {
		var er struct{ Error events.ErrorDetail }
		if code := e.get(t, c.path, &er); code != http.StatusBadRequest || er.Error.Field != c.field || er.Error.Code != http.StatusBadRequest {
			t.Errorf("GET %s: %d %+v, want 400 naming %s", c.path, code, er, c.field)
		}
	}
	var er struct{ Error events.ErrorDetail }
	if code := e.get(t, "/api/nothing", &er); code != http.StatusNotFound {
		t.Errorf("an unknown route: %d", code)
	}
}

func TestBearerToken(t *testing.T) {
	e := start(t, inspector.Config{Token: "s3cret"})
	for _, p := range []string{"/api/tenants", "/api/usage", "/api/tenants/acme/sessions", "/api/tenants/acme/events"} {
		var er struct{ Error events.ErrorDetail }
		if code := e.get(t, p, &er); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d", p, code)
		}
		if code := e.get(t, p, &er, "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d", p, code)
		}
	}
	var tenants struct{ Tenants []inspector.TenantInfo }
	if code := e.get(t, "/api/tenants", &tenants, "Authorization", "Bearer s3cret"); code != http.StatusOK {
		t.Fatalf("with the token: %d", code)
	}
	// Tokens are not taken from the query string, except by the event stream (EventSource).
	for _, p := range []string{"/api/tenants?access_token=s3cret", "/api/tenants/acme/sessions/events?access_token=s3cret"} {
		if code := e.get(t, p, nil); code != http.StatusUnauthorized {
			t.Fatalf("GET %s: %d, want 401 (a query token on a plain route)", p, code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/api/tenants/acme/events?access_token=s3cret", nil)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(res.Body).ReadString('\n')
	cancel()
	res.Body.Close()
	if res.StatusCode != http.StatusOK || line != "retry: 2000\n" {
		t.Fatalf("events with access_token: %d %q", res.StatusCode, line)
	}
	// The page holds no data and is served without the token.
	if code := e.get(t, "/", nil); code != http.StatusOK {
		t.Fatalf("the page: %d", code)
	}
}

func TestPageIsSelfContained(t *testing.T) {
	e := start(t, inspector.Config{})
	for _, c := range []struct{ path, ctype, holds string }{
		{"/", "text/html; charset=utf-8", `<meta charset="utf-8">`},
		{"/app.js", "text/javascript; charset=utf-8", "EventSource"},
		{"/style.css", "text/css; charset=utf-8", `"Noto Sans CJK SC"`},
	} {
		res, err := e.srv.Client().Get(e.srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = bufio.NewReader(res.Body).WriteTo(&b)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != c.ctype || !strings.Contains(b.String(), c.holds) {
			t.Errorf("GET %s: %d %q, holds %q: %v", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.holds, strings.Contains(b.String(), c.holds))
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: CSP %q", c.path, csp)
		}
		for _, font := range []string{"PingFang SC", "Microsoft YaHei"} {
			if c.path == "/style.css" && !strings.Contains(b.String(), font) {
				t.Errorf("the font stack lacks %s", font)
			}
		}
	}
	// Nothing is loaded from elsewhere: no absolute URL in any asset.
	err := fs.WalkDir(inspector.Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(inspector.Assets(), p)
		if err != nil {
			return err
		}
		// The SVG namespace is a name, not a place anything is loaded from.
		text := strings.ReplaceAll(string(data), `"http://www.w3.org/2000/svg"`, "")
		if strings.Contains(text, "://") {
			return errors.New(p + " refers to another origin")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []inspector.Config{
		{Tenants: []string{"ok", "not.ok"}},
		{Budget: memory.Budget{ContextWindow: 1000, PressureRatio: 1.5}},
	} {
		if _, err := inspector.New(c, nil, nil, zerolog.Nop()); err == nil {
			t.Errorf("New(%+v) accepted a bad config", c)
		}
	}
}
