package typescript_test

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

// packageJSON is what the tests read of package.json.
type packageJSON struct {
	Name       string            `json:"name"`
	Version    string            `json:"version"`
	Engines    map[string]string `json:"engines"`
	DevEngines struct {
		Runtime struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"runtime"`
	} `json:"devEngines"`
}

// TestEnginesAgree checks the Node.js versions the package states against its lock file: every
// package the client installs (a dependency, not a dev one) runs on the oldest Node.js of
// package.json's engines, and every dev dependency on devEngines' oldest, which is not older
// than engines'. So npm ci on a Node.js devEngines allows, and npm install of the client on one
// engines allows, warn of no EBADENGINE (as @nats-io/nuid 3.0.0, node >= 22, did on Node 20).
func TestEnginesAgree(t *testing.T) {
	var pkg packageJSON
	readJSON(t, "package.json", &pkg)
	var lock struct {
		Packages map[string]struct {
			Version string          `json:"version"`
			Dev     bool            `json:"dev"`
			Engines json.RawMessage `json:"engines"`
		} `json:"packages"`
	}
	readJSON(t, "package-lock.json", &lock)

	runtime, err := minNode(pkg.Engines["node"])
	if err != nil {
		t.Fatalf("package.json engines.node: %v", err)
	}
	if pkg.DevEngines.Runtime.Name != "node" {
		t.Fatalf("package.json devEngines.runtime.name is %q, want node", pkg.DevEngines.Runtime.Name)
	}
	dev, err := minNode(pkg.DevEngines.Runtime.Version)
	if err != nil {
		t.Fatalf("package.json devEngines.runtime.version: %v", err)
	}
	if less(dev, runtime) {
		t.Errorf("devEngines (%s) allows an older Node.js than engines (%s)", pkg.DevEngines.Runtime.Version, pkg.Engines["node"])
	}
	checked := 0
	for path, p := range lock.Packages {
		if path == "" || len(p.Engines) == 0 {
			continue
		}
		var engines struct {
			Node string `json:"node"`
		}
		if err := json.Unmarshal(p.Engines, &engines); err != nil {
			t.Errorf("%s@%s: engines %s: %v", path, p.Version, p.Engines, err)
			continue
		}
		if engines.Node == "" {
			continue
		}
		need, err := minNode(engines.Node)
		if err != nil {
			t.Errorf("%s@%s: engines.node: %v", path, p.Version, err)
			continue
		}
		checked++
		switch {
		case !p.Dev && less(runtime, need):
			t.Errorf("%s@%s, which the client installs, needs node %s; package.json engines says %s",
				path, p.Version, engines.Node, pkg.Engines["node"])
		case p.Dev && less(dev, need):
			t.Errorf("dev dependency %s@%s needs node %s; package.json devEngines says %s",
				path, p.Version, engines.Node, pkg.DevEngines.Runtime.Version)
		}
	}
	if checked == 0 {
		t.Fatal("no package of package-lock.json states engines.node: is the lock file read right?")
	}
}

// nodeRange is the one form of engines ranges the lock file holds: a lower bound.
var nodeRange = regexp.MustCompile(`^>=\s*v?(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?$`)

// minNode returns the oldest version a ">= X[.Y[.Z]]" range allows, and an error for any other
// form (extend it when a dependency states one).
func minNode(r string) ([3]int, error) {
	m := nodeRange.FindStringSubmatch(strings.TrimSpace(r))
	if m == nil {
		return [3]int{}, fmt.Errorf("range %q is not of the form >=X[.Y[.Z]] this test reads", r)
	}
	var v [3]int
	for i, s := range m[1:] {
		v[i], _ = strconv.Atoi(s) // "" and "x" are 0
	}
	return v, nil
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The README's placeholders in its block of how to depend on the package from a checkout.
const (
	checkoutPlaceholder = "/path/to/agentmem/clients/typescript"
	projectPlaceholder  = "/path/to/your-project"
)

// consumer is a program of a project that depends on the packed package: it imports both
// client entry points as a project does, publishes a turn over the HTTP API and reads it back.
const consumer = `import { AgentmemClient, ServiceUnavailableError } from "@agentmem/client";
import { publishTurn } from "@agentmem/client/nats";

const mem = new AgentmemClient({ url: process.env.AGENTMEM_URL!, tenant: "acme", token: process.env.AGENTMEM_TOKEN });
const ack = await mem.publish("pack-1", { role: "user", content: "I keep bees.", user: "ida" });
const r = await mem.retrieve({ query: "bees", session: "pack-1", after: ack.id, wait_ms: 5000, types: ["CONVERSATION"] });
console.log(JSON.stringify({ nats: typeof publishTurn, unavailable: typeof ServiceUnavailableError, content: r.entries[0]?.content }));
`

// TestInstallFromCheckout runs the README's recipe for depending on the package from a checkout
// (it is not on npm): npm ci and npm pack in a copy of the package's sources, then npm install
// of the tarball into a new project, whose TypeScript program imports the package, compiles
// against the types it ships and runs against a real agentmem. Nothing may warn EBADENGINE.
func TestInstallFromCheckout(t *testing.T) {
	requireNode(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- pack_test.go runs the next block -->")
	_, rest, ok2 := strings.Cut(rest, "```sh\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 || !strings.Contains(block, checkoutPlaceholder) || !strings.Contains(block, projectPlaceholder) {
		t.Fatalf("README.md has no sh block naming %s and %s after <!-- pack_test.go runs the next block -->", checkoutPlaceholder, projectPlaceholder)
	}

	// A copy of what a checkout holds (without node_modules and dist, which the recipe makes).
	checkout, project := filepath.Join(t.TempDir(), "typescript"), t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "tsconfig.json", "README.md"} {
		copyFile(t, filepath.Join(dir, f), filepath.Join(checkout, f))
	}
	if err := os.CopyFS(filepath.Join(checkout, "src"), os.DirFS(filepath.Join(dir, "src"))); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer(checkoutPlaceholder, checkout, projectPlaceholder, project).Replace(block)
	env := []string{"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false",
		"npm_config_prefer_offline=true"}
	start := time.Now()
	stdout, stderr := runBoth(t, t.TempDir(), 5*time.Minute, env, "sh", "-ec", script)
	t.Logf("%s(%s)\n%s%s", strings.TrimSpace(script)+"\n", time.Since(start).Round(time.Millisecond), stdout, stderr)
	if strings.Contains(string(stderr), "EBADENGINE") {
		t.Errorf("the recipe warned EBADENGINE on Node.js %s:\n%s", nodeVersion(t), stderr)
	}

	var pkg packageJSON
	readJSON(t, "package.json", &pkg)
	var installed packageJSON
	readJSON(t, filepath.Join(project, "node_modules", pkg.Name, "package.json"), &installed)
	if installed.Version != pkg.Version {
		t.Fatalf("the project has %s %s, want %s", pkg.Name, installed.Version, pkg.Version)
	}
	for _, f := range []string{"index.js", "index.d.ts", "agentmem.js", "agentmem.d.ts"} {
		if _, err := os.Stat(filepath.Join(project, "node_modules", pkg.Name, "dist", f)); err != nil {
			t.Errorf("the packed package lacks its built dist/%s: %v", f, err)
		}
	}

	// The project's program (an ES module: .mts), compiled against the shipped types (the
	// compiler and @types/node from the checkout's dev dependencies) and run.
	if err := os.WriteFile(filepath.Join(project, "main.mts"), []byte(consumer), 0o644); err != nil {
		t.Fatal(err)
	}
	tsconfig := fmt.Sprintf(`{"compilerOptions": {"target": "es2022", "lib": ["es2022"], "module": "nodenext",
  "moduleResolution": "nodenext", "strict": true, "skipLibCheck": true, "outDir": "dist",
  "types": ["node"], "typeRoots": [%q]}, "files": ["main.mts"]}`, filepath.Join(checkout, "node_modules", "@types"))
	if err := os.WriteFile(filepath.Join(project, "tsconfig.json"), []byte(tsconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, project, 2*time.Minute, nil, "node", filepath.Join(checkout, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json")
	base := startHTTP(t)
	out := run(t, project, time.Minute, []string{"AGENTMEM_URL=" + base, "AGENTMEM_TOKEN=" + exampleToken}, "node", "dist/main.mjs")
	var got struct {
		NATS        string `json:"nats"`
		Unavailable string `json:"unavailable"`
		Content     string `json:"content"`
	}
	if err := json.Unmarshal(lastLine(out), &got); err != nil {
		t.Fatalf("the project's program printed no JSON line (%v): %s", err, out)
	}
	if got.NATS != "function" || got.Unavailable != "function" || got.Content != "I keep bees." {
		t.Fatalf("the project's program printed %+v, want both entry points and its turn read back", got)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func nodeVersion(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(string(run(t, ".", 30*time.Second, nil, "node", "--version")))
}
