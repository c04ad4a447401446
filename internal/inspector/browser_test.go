package inspector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/inspector"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// chromiumPath is Debian's chromium; the test installs nothing itself (.ci/run does).
const chromiumPath = "/usr/bin/chromium"

// browser drives one headless Chromium tab against the inspector.
type browser struct {
	t     *testing.T
	ctx   context.Context
	dir   string // where screenshots go
	mu    sync.Mutex
	notes []string // console errors and uncaught exceptions of the page
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("skipping the browser test: %s is absent (apt-get install chromium; .ci/run installs it): %v", chromiumPath, err)
	}
	dir := os.Getenv("AGENTMEM_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Every wait below is bounded by this context as well as by its own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: bctx, dir: dir}
	// Start the browser now, so that a broken install fails here with a clear message.
	if err := chromedp.Do(bctx); err != nil {
		cancelTab()
		cancelAlloc()
		cancel()
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	msgs := chromedp.Console(bctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				b.mu.Lock()
				b.notes = append(b.notes, m.String()+" at "+m.URL+":"+strconv.FormatInt(m.Line, 10))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancel()
		<-done
	})
	return b
}

// errors returns the console errors and exceptions seen so far.
func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.notes...)
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// text is the textContent of the first element matching a CSS selector, "" when there is none.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "")`, sel))
}

func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%q)?.getAttribute(%q) ?? "")`, sel, name))
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	return eval[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// waitFor polls a JavaScript condition until it holds, for at most 25 seconds.
func (b *browser) waitFor(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(25 * time.Second)
	for {
		if eval[bool](b, "Boolean("+cond+")") {
			return
		}
		if time.Now().After(deadline) {
			b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
			b.t.Fatalf("the page never showed %s (%s); main: %q; console: %v", what, cond, b.text("#main"), b.errors())
		}
		poll := time.NewTimer(100 * time.Millisecond)
		<-poll.C
	}
}

// shot saves a full-page PNG screenshot and logs its path.
func (b *browser) shot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	// From the top, so that the sticky header sits where it belongs in the full-page image.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		b.t.Errorf("scrolling up for %s: %v", name, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.dir, "inspector-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// TestInspectorInBrowser loads the inspector in headless Chromium and checks, step by step, what
// a person sees: a session's gauge crossing the pressure threshold, the summary that replaced
// the oldest turns, a search with its ranked entries (a Chinese one among them) and built
// context, a fact's history, and the usage report.
func TestInspectorInBrowser(t *testing.T) {
	b := newBrowser(t)
	e := start(t, inspector.Config{})
	s := newScript(t, "acme", "s1", "alice")
	s.below(t, e)

	// 1. The session below the threshold: 600 of 1,000 tokens.
	b.do(chromedp.Navigate(e.srv.URL + "/#/t/acme/s/s1"))
	b.waitFor("the session", `document.querySelector("#main[data-view=session][data-loaded=true] #gauge")`)
	b.waitFor("the live feed connected", `document.querySelector("#feed-status").dataset.state === "live"`)
	if got := b.text("#gauge-ratio"); got != "60.0 %" {
		t.Fatalf("gauge ratio %q, want 60.0 %%", got)
	}
	if st, badge := b.attr("#gauge", "data-state"), b.text("#gauge-state"); st != "ok" || badge != "ok" {
		t.Fatalf("gauge state %q (badge %q), want ok", st, badge)
	}
	if got := b.text("#gauge-tokens"); got != "600 / 1,000 tokens" {
		t.Fatalf("gauge tokens %q", got)
	}
	if got := b.text("#gauge-note"); !strings.Contains(got, "threshold 800 tokens (80.0 %)") {
		t.Fatalf("gauge note %q, want the 80 %% threshold", got)
	}
	if left := eval[string](b, `document.querySelector("#gauge .gauge-threshold").style.left`); left != "80%" {
		t.Fatalf("the threshold mark sits at %q, want 80%%", left)
	}
	if n := b.count("#entries tbody tr"); n != 4 {
		t.Fatalf("%d entries shown, want 4", n)
	}
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		if got := b.text(fmt.Sprintf(`#entries tr[data-id=%q] td.text`, id)); got != s.texts[id] {
			t.Fatalf("entry %s shows %q, want %q", id, got, s.texts[id])
		}
	}
	if got := b.text(`#entries tr[data-id="t2"] td:nth-child(4)`); got != "assistant" {
		t.Fatalf("t2's role shows %q", got)
	}
	b.shot("01-session-below-threshold")

	// 2. A long turn crosses the threshold: the page follows (feed event and polling).
	s.cross(t, e)
	b.waitFor("the gauge at 85 %", `document.querySelector("#gauge-ratio")?.textContent === "85.0 %"`)
	if st, badge := b.attr("#gauge", "data-state"), b.text("#gauge-state"); st != "pressure" || badge != "pressure" {
		t.Fatalf("gauge state %q (badge %q), want pressure", st, badge)
	}
	if got := b.text("#gauge-last"); !strings.Contains(got, "last crossing #1 at 90.0 % (900 / 1,000 tokens)") {
		t.Fatalf("gauge note on the crossing %q", got)
	}
	b.waitFor("the pressure event in the feed", `document.querySelector('#feed li[data-kind="pressure"]')`)
	if got := b.text(`#feed li[data-kind="pressure"] .line`); !strings.Contains(got, "pressure #1 at 90.0 %") {
		t.Fatalf("feed shows %q", got)
	}
	b.waitFor("the applied summary", `document.querySelector('#summaries .summary[data-status="applied"]')`)
	if n := b.count(`#summaries .summary[data-status="applied"] .replaced-table tbody tr`); n != 4 {
		t.Fatalf("the summary lists %d replaced turns, want 4", n)
	}
	for _, id := range []string{"t1", "t4"} {
		got := b.text(fmt.Sprintf(`#summaries .summary .replaced-table tr[data-id=%q] td.text`, id))
		if got != s.texts[id] {
			t.Fatalf("replaced turn %s shows %q, want its text", id, got)
		}
	}
	if n := b.count("#entries tbody tr"); n != 2 || b.attr("#entries tbody tr:first-child", "data-type") != "SUMMARY" {
		t.Fatalf("after the crossing %d entries, the first of type %q; want the summary and t5", n, b.attr("#entries tbody tr:first-child", "data-type"))
	}
	if n := b.count(".pressure-table tbody tr"); n != 1 {
		t.Fatalf("%d pressure events listed", n)
	}
	b.do(chromedp.Click(chromedp.CSS(`#summaries .summary[data-status="applied"] details > summary`)))
	b.waitFor("the replaced turns", `document.querySelector('#summaries .summary details[open] .replaced-table tr[data-id="t1"]').offsetHeight > 0`)
	b.shot("02-session-pressure-and-summary")

	// 3. Search: a Chinese turn ranks first, its text rendered as published.
	zh := "我最喜欢的编程语言是 Go"
	e.turn(t, "acme", "s1", "alice", "t6", "user", zh, s.t0.Add(10*time.Minute))
	b.waitFor("the gauge at 85.8 %", `document.querySelector("#gauge-ratio")?.textContent === "85.8 %"`)
	query := "favourite programming language 我最喜欢的编程语言是什么？"
	b.do(chromedp.SetValue(chromedp.ID("search-q"), query), chromedp.Click(chromedp.ID("search-go")))
	b.waitFor("the search results", `document.querySelector("#search-results").dataset.state === "done"`)
	if got := eval[string](b, `document.querySelector("#search-q").value`); got != query {
		t.Fatalf("the search box holds %q", got)
	}
	if n := b.count("#results tr.result"); n < 2 {
		t.Fatalf("%d ranked entries, want the Chinese turn and the English one", n)
	}
	zhRow, enRow := `#results tr[data-id="t6"]`, `#results tr[data-id="t5"]`
	if got := b.text(zhRow + " .content"); got != zh {
		t.Fatalf("the Chinese entry shows %q, want %q", got, zh)
	}
	if got := b.text(enRow + " .content"); got != s.texts["t5"] {
		t.Fatalf("the English entry shows %q", got)
	}
	scores := eval[[]float64](b, `[...document.querySelectorAll("#results tr.result td.score")].map((td) => parseFloat(td.textContent))`)
	for i := 1; i < len(scores); i++ {
		if scores[i] > scores[i-1] {
			t.Fatalf("scores %v are not best first", scores)
		}
	}
	kw, err := strconv.ParseFloat(b.text(zhRow+" td.keyword"), 64)
	if err != nil || kw <= 0 {
		t.Fatalf("keyword score %q", b.text(zhRow+" td.keyword"))
	}
	for cell, want := range map[string]string{"weight": "1.000", "vector": "–", "relevance": b.text(zhRow + " td.keyword")} {
		if got := b.text(zhRow + " td." + cell); got != want {
			t.Fatalf("%s shows %q, want %q", cell, got, want)
		}
	}
	if got := b.text(zhRow + " td.decay"); got == "" || got == "–" {
		t.Fatalf("decay shows %q", got)
	}
	if got := b.text("#search-context"); !strings.Contains(got, zh) || !strings.Contains(got, "I love writing Go") {
		t.Fatalf("the built context %q lacks the ranked entries", got)
	}
	b.shot("03-search-chinese")

	// 4. A fact's history: Paris, then Berlin.
	t0 := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	e.turn(t, "acme", "paris", "alice", "p1", "user", "I live in Paris.", t0)
	e.end(t, "acme", "paris", "alice")
	e.turn(t, "acme", "berlin", "alice", "b1", "user", "I moved to Berlin.", t0.Add(24*time.Hour))
	e.end(t, "acme", "berlin", "alice")
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		var f inspector.UserFacts
		e.get(t, "/api/tenants/acme/users/alice/facts", &f)
		for _, h := range f.Histories {
			if h.Key == "user.city" && len(h.Versions) == 2 {
				return nil
			}
		}
		return fmt.Errorf("no city history yet: %+v", f.Histories)
	})
	b.do(chromedp.Click(chromedp.ID("session-user")))
	b.waitFor("the user's facts", `document.querySelector('#main[data-view=user][data-loaded=true] .fact-card[data-key="user.city"]')`)
	card := `.fact-card[data-key="user.city"]`
	if got := b.text(card + " .fact-live"); got != "The user lives in Berlin" {
		t.Fatalf("the live city fact shows %q", got)
	}
	if !eval[bool](b, `document.querySelector('`+card+` .history').hidden`) {
		t.Fatal("the history is open before a click")
	}
	b.do(chromedp.Click(chromedp.CSS(card + " .history-toggle")))
	b.waitFor("the history", `!document.querySelector('`+card+` .history').hidden`)
	if n := b.count(card + " tr.version"); n != 2 {
		t.Fatalf("%d versions shown, want 2", n)
	}
	live, old := card+` tr.version:nth-child(1)`, card+` tr.version:nth-child(2)`
	if st, txt := b.attr(live, "data-status"), b.text(live+" td.text"); st != "live" || txt != "The user lives in Berlin" {
		t.Fatalf("first version %q %q, want Berlin live", st, txt)
	}
	if st, txt := b.attr(old, "data-status"), b.text(old+" td.text"); st != "superseded" || txt != "The user lives in Paris" {
		t.Fatalf("second version %q %q, want Paris superseded", st, txt)
	}
	if from, to := b.text(live+" td.valid-from"), b.text(old+" td.valid-to"); from == "" || from != to {
		t.Fatalf("Berlin valid from %q, Paris valid to %q: want the same time", from, to)
	}
	if got := b.text(old + " td.superseded-by"); got != "The user lives in Berlin" {
		t.Fatalf("Paris superseded by %q", got)
	}
	if got := b.text(old + " td.prov .quote"); !strings.Contains(got, "I live in Paris.") || !strings.Contains(got, "paris") {
		t.Fatalf("Paris provenance shows %q", got)
	}
	if got := b.attr(old+" td.prov a", "href"); got != "#/t/acme/s/paris?turn=p1" {
		t.Fatalf("Paris provenance links to %q", got)
	}
	if b.text(live+" td.valid-to") != "—" {
		t.Fatalf("Berlin shows an end of validity: %q", b.text(live+" td.valid-to"))
	}
	b.shot("04-fact-history")

	// The provenance link leads back to the turn in its session.
	b.do(chromedp.Click(chromedp.CSS(old + " td.prov a")))
	b.waitFor("the Paris turn highlighted", `document.querySelector('#main[data-view=session][data-loaded=true] #entries tr.highlight[data-id="p1"]')`)
	if got := b.text(`#entries tr[data-id="p1"] td.text`); got != "I live in Paris." {
		t.Fatalf("the provenance turn shows %q", got)
	}

	// 5. The usage report (offline workers make no LLM calls: these counters stand for an LLM's).
	js, _ := jetstream.New(e.nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	us, err := usage.Open(ctx, js, events.DefaultTopology())
	if err != nil {
		t.Fatal(err)
	}
	if err := us.Add(ctx, "acme", "s1", memory.Usage{Calls: 3, InputTokens: 1200, OutputTokens: 150}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Click(chromedp.CSS(`#crumbs a[href="#/"]`)))
	b.waitFor("the overview", `document.querySelector('#main[data-view=overview][data-loaded=true] #usage')`)
	if got := b.text(`#usage tr.usage-session[data-session="s1"] td:nth-child(3)`); got != "3" {
		t.Fatalf("usage of s1 shows %q calls", got)
	}
	if got := b.text(`#usage tr.usage-tenant[data-tenant="acme"] td:nth-child(4)`); got != "1,200" {
		t.Fatalf("acme's input tokens show %q", got)
	}
	if got := b.text(`.tenants-table tr[data-tenant="acme"] td:nth-child(2)`); got != "3" {
		t.Fatalf("acme shows %q sessions, want 3", got)
	}
	b.shot("05-overview-usage")

	// 6. Where the process's memory sits: the resident set, and the users' views the searches
	// above loaded (alice's, at least).
	b.waitFor("the memory panel", `document.querySelector('#memory table.memory-structures tr[data-structure=retrieve_user_views]')`)
	if got := b.text(`#memory table.memory-process tr[data-kind=resident] td.num`); !strings.HasSuffix(got, " MB") {
		t.Fatalf("the resident set shows %q", got)
	}
	if got := b.text(`#memory table.memory-structures tr[data-structure=retrieve_user_views] td:nth-child(3)`); got == "0 views" || !strings.HasSuffix(got, " views") {
		t.Fatalf("the users' views show %q", got)
	}
	if b.count(`#memory table.memory-heap tr[data-component]`) < 2 {
		t.Fatalf("the heap by component has %d rows", b.count(`#memory table.memory-heap tr[data-component]`))
	}
	b.shot("06-overview-memory")

	if errs := b.errors(); len(errs) > 0 {
		t.Fatalf("the page logged errors: %v", errs)
	}
}

// TestInspectorGraphInBrowser: a user's graph drawn in headless Chromium: the user in the
// middle, the people and places named, the relations as edges; a move ends the old edge, which
// the history shows dashed and the relations table as ended; at a time before the move the old
// city is the live relation again. Chinese names render as text.
func TestInspectorGraphInBrowser(t *testing.T) {
	b := newBrowser(t)
	e := start(t, inspector.Config{})
	t0 := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	e.turn(t, "acme", "g1", "alice", "g1-1", "user", "My best friend Melanie, Mel for short, lives in Rome. I live in Paris.", t0)
	e.turn(t, "acme", "g1", "alice", "g1-2", "user", "我妹妹小美和小刚结婚了。", t0.Add(time.Minute))
	e.end(t, "acme", "g1", "alice")
	e.turn(t, "acme", "g2", "alice", "g2-1", "user", "I moved from Paris to Lisbon.", t0.Add(24*time.Hour))
	e.end(t, "acme", "g2", "alice")
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		var g inspector.UserGraph
		e.get(t, "/api/tenants/acme/users/alice/graph", &g)
		// Every edge written, the Paris edge ended by the Lisbon one.
		for _, h := range g.History {
			if h.ObjectName == "Paris" && h.ValidTo != nil && len(g.History) >= 5 {
				return nil
			}
		}
		return fmt.Errorf("graph so far: %+v", g.History)
	})
	b.do(chromedp.Navigate(e.srv.URL + "/#/t/acme/u/alice"))
	b.waitFor("the graph", `document.querySelector('#main[data-view=user][data-loaded=true] #graph-svg')`)
	for _, name := range []string{"Melanie", "Paris", "Lisbon", "小美", "小刚"} {
		if n := b.count(fmt.Sprintf(`#graph-svg g.node[data-name=%q]`, name)); n != 1 {
			t.Fatalf("%d nodes named %s", n, name)
		}
	}
	if got := b.text(`#graph-svg g.node-user .node-label`); got != "user alice" {
		t.Fatalf("the user's node is labelled %q", got)
	}
	if n := b.count(`#graph-svg g.node[data-name="Mel"]`); n != 0 {
		t.Fatal("Mel is drawn as a node of its own, not as Melanie's alias")
	}
	if got := b.text(`.entities-table tr[data-name="Melanie"] td.aliases`); got != "Mel" {
		t.Fatalf("Melanie's aliases show %q", got)
	}
	if got := b.attr(`#graph-svg g.node[data-name="Paris"]`, "data-type"); got != "place" {
		t.Fatalf("Paris is of type %q", got)
	}
	live := `#graph-svg g.edge[data-state="live"]`
	if n := b.count(live); n != 4 {
		t.Fatalf("%d live edges drawn, want 4 (friend, lives_in Lisbon, sister, married_to)", n)
	}
	if n := b.count(`#graph-svg g.edge[data-object="Paris"]`); n != 0 {
		t.Fatal("the ended Paris edge is drawn without the history")
	}
	if got := b.text(`#graph-svg g.edge[data-relation="married_to"] .edge-label`); got != "married_to" {
		t.Fatalf("the married_to edge is labelled %q", got)
	}
	// Positions: every node inside the drawing, none on top of another.
	overlap := eval[bool](b, `(() => {
		const ps = [...document.querySelectorAll("#graph-svg g.node")].map((g) => g.getBoundingClientRect());
		const box = document.querySelector("#graph-svg").getBoundingClientRect();
		for (const p of ps) if (p.left < box.left || p.right > box.right || p.top < box.top || p.bottom > box.bottom) return true;
		for (let i = 0; i < ps.length; i++) for (let j = i + 1; j < ps.length; j++) {
			const a = ps[i], c = ps[j];
			const dx = (a.left + a.right - c.left - c.right) / 2, dy = (a.top + a.bottom - c.top - c.bottom) / 2;
			if (Math.hypot(dx, dy) < 20) return true;
		}
		return false;
	})()`)
	if overlap {
		b.shot("failed-graph-layout")
		t.Fatal("a node lies outside the drawing or on another")
	}
	ended := `.relations-table tr[data-state="ended"]`
	if n := b.count(ended); n != 1 || !strings.Contains(b.text(ended+" .rel-text"), "user lives_in Paris") {
		t.Fatalf("%d ended relations listed (%q), want Paris's", n, b.text(ended+" .rel-text"))
	}
	if b.text(ended+" td.valid-to") == "—" {
		t.Fatal("the ended Paris relation shows no end")
	}
	b.shot("06-graph")

	// The history: the ended edge drawn dashed.
	b.do(chromedp.Click(chromedp.ID("graph-history")))
	b.waitFor("the ended edge", `document.querySelector('#graph-svg g.edge[data-state="ended"][data-object="Paris"]')`)
	if dash := eval[string](b, `getComputedStyle(document.querySelector('#graph-svg g.edge-ended line')).strokeDasharray`); dash == "none" || dash == "" {
		t.Fatalf("the ended edge is drawn solid (dasharray %q)", dash)
	}
	b.shot("07-graph-history")

	// At a time before the move, Paris is the city and Lisbon is not named yet.
	before := t0.Add(time.Hour).UTC().Format(time.RFC3339)
	b.do(chromedp.SetValue(chromedp.ID("graph-at"), before), chromedp.Click(chromedp.ID("graph-at-go")))
	b.waitFor("the graph before the move", `document.querySelector('#graph-svg g.edge[data-state="live"][data-object="Paris"]')`)
	if n := b.count(`#graph-svg g.node[data-name="Lisbon"]`); n != 0 {
		t.Fatal("Lisbon is drawn before it was named")
	}
	if got := b.text("#graph-count"); !strings.Contains(got, "relations at") {
		t.Fatalf("the graph's heading says %q", got)
	}
	b.shot("08-graph-before-the-move")
	if errs := b.errors(); len(errs) > 0 {
		t.Fatalf("the page logged errors: %v", errs)
	}
}
