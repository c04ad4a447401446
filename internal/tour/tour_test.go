package tour

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTour runs the documented examples one after another against one memoryd, in the order
// the README links them, as a newcomer who follows the docs would: the README's one-minute tour,
// the curl calls of docs/http.md, the Python script, the TypeScript agent and snippet, and the
// langchaingo program of docs/clients.md. Each example is read from its document and checked
// against what the document says it shows; at the end nothing was dead-lettered (examples that
// share a session, but not its user, would be).
//
// How the documents are read, so that a new example is picked up without touching this test:
//   - README.md: every command of a shell block whose program is bin/memctl (the built memctl),
//     with AGENTMEM_NATS set, and --wait on for publish as on a terminal.
//   - docs/http.md: every block of curl commands, in order, with $AGENTMEM_HTTP and $TOKEN set.
//     Each call must succeed (2xx) unless the block's JSON example shows its "status". When a
//     JSON block follows a curl block in the same section (before any other shell block), every
//     key it shows must be in the answers and every string, integer and boolean value it shows
//     (not elided with "…") must be a value of that key in them (see docClaims); a block of
//     reads (GET, or POST …/retrieve) is repeated until it does, for a bounded time, because the
//     docs describe what is there "a moment after" (facts are extracted after a session ends).
//   - clients/python/README.md: the python block after the tests/test_readme.py marker, and what
//     the README says it prints; docs/clients.md shows the same script.
//   - clients/typescript/README.md: the commands of its shell block (make run and cd left out:
//     memoryd is this test's, the directory a copy of clients/typescript) and its ts block,
//     compiled with the client and run.
//   - docs/clients.md: the langchaingo program (contrib/langchaingo/example, whose own test
//     checks that the document shows it as it is) and what the document says it prints.
//
// A shell or JSON block that is not meant to be run or checked against this memoryd as it
// stands opts out with the line "<!-- tour: skip -->" right before its opening fence.
func TestTour(t *testing.T) {
	if testing.Short() {
		t.Skip("the tour builds memoryd, memctl and the langchaingo example: not in -short")
	}
	bin := buildCommands(t)
	m := startMemoryd(t, bin)

	t.Run("README", func(t *testing.T) { readmeTour(t, m) })
	t.Run("docs/http.md", func(t *testing.T) { httpDoc(t, m) })
	t.Run("clients/python", func(t *testing.T) { pythonReadme(t, m) })
	t.Run("clients/typescript", func(t *testing.T) { typescriptReadme(t, m) })
	t.Run("docs/clients.md langchaingo", func(t *testing.T) { langchaingoExample(t, m) })

	// Every example used its own session and user: none of their turns was rejected.
	out, err := runCmd(repoRoot, []string{"AGENTMEM_NATS=" + m.nats}, time.Minute, filepath.Join(m.bin, "memctl"), "dlq", "list", "--all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var all []struct {
		Subject string `json:"subject"`
	}
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("memctl dlq list --json: %v: %s", err, out)
	}
	// The TypeScript agent rejects one turn on purpose, in a session of its own whose name ends
	// in -bad, to show TurnRejectedError; every other dead letter is a collision.
	var letters []string
	for _, l := range all {
		if !strings.HasSuffix(l.Subject, "-bad") {
			letters = append(letters, l.Subject)
		}
	}
	if len(letters) != 0 {
		t.Fatalf("the examples left %d dead letters (two examples sharing a session?):\n%s", len(letters), out)
	}
}

// readmeTour runs the memctl commands of the README.
func readmeTour(t *testing.T, m *memoryd) {
	memctl := filepath.Join(m.bin, "memctl")
	// AGENTMEM_WAIT: memctl publish waits for the turn on a terminal, which is where a reader
	// runs it; here its output is a pipe.
	env := []string{"AGENTMEM_NATS=" + m.nats, "AGENTMEM_WAIT=true"}
	published := map[string]int{} // turns published per --session
	ran := 0
	for _, b := range readBlocks(t, "README.md") {
		if b.lang != "sh" || b.skip {
			continue
		}
		cmds, err := commands(b.text)
		if err != nil {
			t.Fatalf("README.md line %d: %v", b.line, err)
		}
		for _, c := range cmds {
			if program(c) != "bin/memctl" {
				continue // make run, make test: this test builds and runs memoryd itself
			}
			ran++
			out, err := sh(repoRoot, env, time.Minute, strings.Replace(c, "bin/memctl", memctl, 1))
			if err != nil {
				t.Fatalf("README.md line %d: %v", b.line, err)
			}
			t.Logf("$ %s\n%s", c, out)
			if err := checkMemctl(c, out, published); err != nil {
				t.Errorf("README.md line %d: %s: %v", b.line, c, err)
			}
		}
	}
	if ran == 0 {
		t.Fatal("README.md has no memctl command")
	}
}

var sessionFlag = regexp.MustCompile(`--session[ =](\S+)`)

// checkMemctl checks that a memctl command of the tour printed what the README says it does.
func checkMemctl(cmd, out string, published map[string]int) error {
	f := strings.Fields(cmd)
	session := ""
	if m := sessionFlag.FindStringSubmatch(cmd); m != nil {
		session = m[1]
	}
	switch f[1] {
	case "publish":
		published[session]++
		if !strings.Contains(out, "applied to session") {
			return fmt.Errorf("memctl did not say the turn was applied")
		}
	case "search":
		// The tour asks for the favourite programming language, in English and in Chinese: the
		// best entry is one of the turns that names it.
		_, rest, ok := strings.Cut("\n"+out, "\n 1. ")
		if !ok {
			return fmt.Errorf("no ranked entry")
		}
		lines := strings.Split(rest, "\n")
		if len(lines) < 3 || !strings.Contains(lines[2], "Go") {
			return fmt.Errorf("the best entry does not name Go")
		}
		if strings.Contains(cmd, "--context") && !strings.Contains(out, "\ncontext (") {
			return fmt.Errorf("--context printed no context")
		}
	case "session":
		want := fmt.Sprintf("turns %d  rejected 0", published[session])
		if !strings.Contains(out, want) {
			return fmt.Errorf("want %q: every turn the tour published, applied", want)
		}
	case "dlq":
		if !strings.Contains(out, "no dead letters") {
			return fmt.Errorf("the tour's turns were dead-lettered")
		}
	}
	return nil
}

// curl calls are recognised by these.
var (
	curlURL    = regexp.MustCompile(`"\$AGENTMEM_HTTP(/[^"]*)"`)
	curlMethod = regexp.MustCompile(`(?:-X|--request)\s+([A-Z]+)`)
	statusLine = regexp.MustCompile(`\n?@@tour-status (\d{3})\n`)
	docStatus  = regexp.MustCompile(`"status"\s*:\s*(\d{3})`)
)

// httpDoc runs the curl calls of docs/http.md.
func httpDoc(t *testing.T, m *memoryd) {
	requireTool(t, "docs/http.md", "curl")
	// curl reads $CURL_HOME/.curlrc: the write-out marks where each answer ends and its status.
	curlHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(curlHome, ".curlrc"), []byte("write-out = \"\\n@@tour-status %{http_code}\\n\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AGENTMEM_HTTP=" + m.http, "TOKEN=" + m.token, "CURL_HOME=" + curlHome}
	blocks := readBlocks(t, "docs/http.md")
	ran := 0
	for i, b := range blocks {
		if b.lang != "sh" || b.skip {
			continue
		}
		cmds, err := commands(b.text)
		if err != nil {
			t.Fatalf("docs/http.md line %d: %v", b.line, err)
		}
		if len(cmds) == 0 || !allCurl(cmds) {
			continue // gateway --http …: the test's memoryd serves the API
		}
		var example *block // the JSON the document shows for these calls
		for _, n := range blocks[i+1:] {
			if n.section != b.section || n.lang == "sh" {
				break
			}
			if n.lang == "json" && !n.skip {
				example = &n
				break
			}
		}
		var claims []claim
		want := 0
		if example != nil {
			if claims, err = docClaims(example.text); err != nil {
				t.Fatalf("docs/http.md line %d: %v", example.line, err)
			}
			if s := docStatus.FindStringSubmatch(example.text); s != nil {
				want, _ = strconv.Atoi(s[1]) // three digits
			}
		}
		ran += len(cmds)
		reads := allReads(cmds)
		deadline := time.Now().Add(30 * time.Second)
		for attempt := 1; ; attempt++ {
			answers, err := runCurl(cmds, env, want)
			if err == nil && example != nil {
				if err = checkClaims(claims, answers); err != nil {
					err = fmt.Errorf("%w (the example on line %d)", err, example.line)
				}
			}
			if err == nil {
				t.Logf("docs/http.md line %d: %d calls as shown (attempt %d)", b.line, len(cmds), attempt)
				break
			}
			if !reads || time.Now().After(deadline) {
				t.Fatalf("docs/http.md line %d: %v", b.line, err)
			}
			poll := time.NewTimer(250 * time.Millisecond)
			<-poll.C
		}
	}
	if ran == 0 {
		t.Fatal("docs/http.md has no curl call")
	}
}

func allCurl(cmds []string) bool {
	for _, c := range cmds {
		if program(c) != "curl" {
			return false
		}
	}
	return true
}

// allReads reports whether every call only reads, so that it can be repeated: a GET, or a
// retrieve.
func allReads(cmds []string) bool {
	for _, c := range cmds {
		method := "GET"
		if m := curlMethod.FindStringSubmatch(c); m != nil {
			method = m[1]
		} else if strings.Contains(c, " -d ") || strings.Contains(c, " --data") {
			method = "POST"
		}
		u := curlURL.FindStringSubmatch(c)
		if method != "GET" && !(method == "POST" && u != nil && strings.HasSuffix(u[1], "/retrieve")) {
			return false
		}
	}
	return true
}

// runCurl runs the curl calls and decodes their answers; each must have status want, or 2xx
// when want is 0.
func runCurl(cmds, env []string, want int) ([]any, error) {
	var answers []any
	for _, c := range cmds {
		out, err := sh(repoRoot, env, time.Minute, c)
		if err != nil {
			return nil, err
		}
		loc := statusLine.FindStringSubmatchIndex(out)
		if loc == nil {
			return nil, fmt.Errorf("%s: no status in its output %q", c, out)
		}
		body, status := out[:loc[0]], out[loc[2]:loc[3]]
		if ok := status[0] == '2'; (want == 0 && !ok) || (want != 0 && status != fmt.Sprint(want)) {
			return nil, fmt.Errorf("%s: status %s: %s", c, status, body)
		}
		var a any
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			return nil, fmt.Errorf("%s: the answer is not JSON (%v): %s", c, err, body)
		}
		answers = append(answers, a)
	}
	return answers, nil
}

// pythonReadme runs the Python README's script with python3 and the client from clients/python.
func pythonReadme(t *testing.T, m *memoryd) {
	requireTool(t, "the Python README's script", "python3")
	const marker = "<!-- tests/test_readme.py runs the next block -->"
	raw, err := os.ReadFile(filepath.Join(repoRoot, "clients/python/README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), marker)
	if !ok {
		t.Fatalf("clients/python/README.md has no %q", marker)
	}
	blocks, err := parseBlocks(after)
	if err != nil || len(blocks) == 0 || blocks[0].lang != "python" {
		t.Fatalf("clients/python/README.md: no python block after %q (%v)", marker, err)
	}
	script := blocks[0].text
	var prints string
	if _, rest, ok := strings.Cut(after, "It prints:"); ok {
		if bs, err := parseBlocks(rest); err == nil && len(bs) > 0 {
			prints = bs[0].text
		}
	}
	if prints == "" {
		t.Fatal("clients/python/README.md does not say what its script prints")
	}
	shown := false
	for _, b := range readBlocks(t, "docs/clients.md") {
		shown = shown || (b.lang == "python" && b.text == script)
	}
	if !shown {
		t.Error("docs/clients.md does not show the Python README's script as it is")
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "readme.py"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(dir, []string{"PYTHONPATH=" + filepath.Join(repoRoot, "clients/python"), "PYTHONNOUSERSITE=1",
		"AGENTMEM_URL=" + m.http, "AGENTMEM_TOKEN=" + m.token}, 2*time.Minute, "python3", "readme.py")
	if err != nil {
		t.Fatal(err)
	}
	// The dates it prints are the day it runs.
	if !matchDates(prints, out) {
		t.Fatalf("the script printed:\n%s\nthe README says:\n%s", out, prints)
	}
}

var isoDate = regexp.MustCompile(`\d{4}-\d{2}-\d{2}`)

// matchDates reports whether got is want, any date in want standing for any date.
func matchDates(want, got string) bool {
	parts := isoDate.Split(want, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `\d{4}-\d{2}-\d{2}`) + `$`).MatchString(got)
}

// typescriptReadme runs the TypeScript README's commands and its client snippet in a copy of
// clients/typescript (its own go test installs and builds in the original meanwhile).
func typescriptReadme(t *testing.T, m *memoryd) {
	requireTool(t, "the TypeScript README", "node", "npm")
	src := filepath.Join(repoRoot, "clients/typescript")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "tsconfig.json", "src/agentmem.ts", "src/agent.ts"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const docURL = "nats://127.0.0.1:4222"
	var snippet string
	var run []string
	for _, b := range readBlocks(t, "clients/typescript/README.md") {
		switch {
		case b.skip:
		case b.lang == "ts" && snippet == "":
			snippet = b.text
		case b.lang == "sh":
			cmds, err := commands(b.text)
			if err != nil {
				t.Fatalf("clients/typescript/README.md line %d: %v", b.line, err)
			}
			run = append(run, cmds...)
		}
	}
	if snippet == "" || len(run) == 0 {
		t.Fatal("clients/typescript/README.md has no ts block or no shell block")
	}
	// The snippet is compiled with the client by the README's npm run build, and run after.
	if err := os.WriteFile(filepath.Join(dir, "src/readme.ts"), []byte(strings.ReplaceAll(snippet, docURL, m.nats)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false", "npm_config_prefer_offline=true"}
	var agent string
	for _, c := range run {
		switch program(c) {
		case "make", "cd": // memoryd is running; the directory is the copy
			continue
		}
		out, err := sh(dir, env, 5*time.Minute, strings.ReplaceAll(c, docURL, m.nats))
		if err != nil {
			t.Fatal(err)
		}
		if program(c) == "node" {
			agent = out
		}
	}
	if agent == "" {
		t.Fatal("clients/typescript/README.md runs no node")
	}
	lines := strings.Split(strings.TrimSpace(agent), "\n")
	var line struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil || !line.OK {
		t.Fatalf("the agent did not say {\"ok\":true,…} (%v): %s", err, agent)
	}
	out, err := runCmd(dir, nil, time.Minute, "node", "dist/readme.js")
	if err != nil {
		t.Fatal(err)
	}
	// The snippet publishes "I code in Go" and prints the context of a retrieve that waits for it.
	if !strings.Contains(out, "I code in Go") {
		t.Fatalf("the README's snippet printed %q, want a context with its turn", out)
	}
}

// langchaingoExample builds and runs contrib/langchaingo/example, the program docs/clients.md
// shows, against the memoryd, and compares what it prints with the document.
func langchaingoExample(t *testing.T, m *memoryd) {
	var prints string
	found := false
	for _, b := range readBlocks(t, "docs/clients.md") {
		if b.lang == "go" && strings.Contains(b.text, "langchaingo.NewMemory") {
			found = true
			continue
		}
		if found && b.lang == "text" {
			prints = b.text
			break
		}
	}
	if prints == "" {
		t.Fatal("docs/clients.md does not say what the langchaingo program prints")
	}
	exe := filepath.Join(t.TempDir(), "example")
	// -mod=mod, as make test builds the contrib modules: the main module is theirs by a replace.
	if out, err := runCmd(filepath.Join(repoRoot, "contrib/langchaingo"), nil, 10*time.Minute,
		"go", "build", "-mod=mod", "-o", exe, "./example"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := runCmd(t.TempDir(), []string{"AGENTMEM_NATS=" + m.nats}, 2*time.Minute, exe)
	if err != nil {
		t.Fatal(err)
	}
	if out != prints {
		t.Fatalf("the program printed:\n%s\ndocs/clients.md says:\n%s", out, prints)
	}
}
