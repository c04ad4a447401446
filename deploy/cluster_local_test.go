package deploy_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deploy/cluster-local.sh runs the cluster of docs/deployment.md ("A cluster without Docker")
// as plain processes. Its flags are checked against the binaries like the compose file's, and
// the whole script (up, demo with a node killed, down) runs end to end.

const clusterScript = "cluster-local.sh"

// clusterBinaries are the binaries the script starts: nats-server, the workers and memctl.
var clusterBinaries = []string{"nats-server", "ingest", "retriever", "embedder", "compressor", "extractor", "memctl"}

// scriptEnv is the environment the script runs in: the test's without AGENTMEM_ variables
// (the workers would read them), and the given settings.
func scriptEnv(settings ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AGENTMEM_") || strings.HasPrefix(kv, "CLUSTER_")
	})
	return append(env, settings...)
}

func requireBash(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed: deploy/cluster-local.sh is a bash script")
	}
}

func TestClusterLocalScriptSyntax(t *testing.T) {
	requireBash(t)
	if out, err := exec.Command("bash", "-n", clusterScript).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v\n%s", clusterScript, err, out)
	}
	fi, err := os.Stat(clusterScript)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable: chmod +x deploy/%s (docs/deployment.md runs it as deploy/%s)", clusterScript, clusterScript, clusterScript)
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Logf("shellcheck is not installed: only bash -n checked %s (Debian: apt-get install shellcheck)", clusterScript)
		return
	}
	if out, err := exec.Command("shellcheck", clusterScript).CombinedOutput(); err != nil {
		t.Errorf("shellcheck %s: %v\n%s", clusterScript, err, out)
	}
}

// TestClusterLocalScriptFlags checks every command the script starts or runs (its `commands`
// listing) against the flags of the binary it names, as built from this checkout.
func TestClusterLocalScriptFlags(t *testing.T) {
	requireBash(t)
	dir := builtTools(t, composeCommands(t))
	for _, b := range clusterBinaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Fatalf("the script runs %s, which the compose file does not (so the test did not build it): build it here too", b)
		}
	}
	cmd := exec.Command("bash", clusterScript, "commands")
	cmd.Env = scriptEnv("CLUSTER_BIN="+dir, "CLUSTER_DIR="+filepath.Join(t.TempDir(), "cluster"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s commands: %v", clusterScript, err)
	}
	flags := binaryFlags(t, composeCommands(t))
	seen := map[string]bool{}
	for _, problem := range checkScriptCommands(string(out), dir, flags, seen) {
		t.Error(problem)
	}
	for _, b := range clusterBinaries {
		if !seen[b] {
			t.Errorf("%s commands lists no %s command; want nats-server, every worker and memctl", clusterScript, b)
		}
	}
	if t.Failed() {
		t.Logf("%s commands printed:\n%s", clusterScript, out)
	}
}

// checkScriptCommands checks each line of a command listing: the program is a binary of dir,
// and every flag is one it defines (for memctl, one of the subcommand or a shared one). seen
// collects the binaries named.
func checkScriptCommands(listing, dir string, flags flagsFunc, seen map[string]bool) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		words := strings.Fields(sc.Text())
		if len(words) == 0 {
			continue
		}
		if filepath.Dir(words[0]) != dir {
			out = append(out, fmt.Sprintf("%s: runs %s, not a binary of CLUSTER_BIN (%s)", sc.Text(), words[0], dir))
			continue
		}
		bin := filepath.Base(words[0])
		seen[bin] = true
		fs, err := flags(bin)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", sc.Text(), err))
			continue
		}
		allowed, label, args := fs.flags, bin, words[1:]
		if bin == "memctl" {
			if len(args) == 0 || fs.sub[args[0]] == nil {
				out = append(out, fmt.Sprintf("%s: no memctl subcommand", sc.Text()))
				continue
			}
			root, err := rootFlags(filepath.Join(dir, bin))
			if err != nil {
				out = append(out, err.Error())
				continue
			}
			allowed = map[string]bool{}
			for f := range fs.sub[args[0]] {
				allowed[f] = true
			}
			for f := range root {
				allowed[f] = true
			}
			label, args = "memctl "+args[0], args[1:]
		}
		for _, w := range args {
			if !strings.HasPrefix(w, "-") {
				continue
			}
			f, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if !allowed[f] {
				out = append(out, fmt.Sprintf("%s has no flag -%s (the script runs: %s); its flags: %s", label, f, sc.Text(), strings.Join(sorted(allowed), ", ")))
			}
		}
	}
	return out
}

// rootFlags are the flags memctl's own -h lists: the shared ones every subcommand takes.
func rootFlags(memctl string) (map[string]bool, error) {
	text, err := helpOutput(memctl)
	if err != nil {
		return nil, err
	}
	flags, _ := parseUsage(text)
	if !flags["nats"] {
		return nil, fmt.Errorf("memctl -h lists no -nats among its shared flags:\n%s", text)
	}
	return flags, nil
}

// logTails returns the last lines of every process log the script kept in its state directory
// (it keeps them when a run fails).
func logTails(state string) string {
	logs, _ := filepath.Glob(filepath.Join(state, "logs", "*.log"))
	var b strings.Builder
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "\n--- %s (last %d lines)\n%s", filepath.Base(l), min(20, len(lines)), strings.Join(lines[max(0, len(lines)-20):], "\n"))
	}
	return b.String()
}

// freePortBase finds a CLUSTER_PORT whose ports (the script's layout: clients +0..2, routes
// +2000..2002, monitoring +4000..4002, workers' health +5000..5004) are all free now.
func freePortBase(t *testing.T) int {
	t.Helper()
	offsets := []int{0, 1, 2, 2000, 2001, 2002, 4000, 4001, 4002, 5000, 5001, 5002, 5003, 5004}
	for range 50 {
		base := 20000 + rand.IntN(30000)
		free := true
		for _, o := range offsets {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+o))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("found no free run of ports for the cluster in 50 tries")
	return 0
}

// TestClusterLocalScript runs deploy/cluster-local.sh end to end with the binaries the other
// tests build: three nats-server nodes and one process of each worker on loopback, a turn
// published and retrieved, the node leading the turns stream killed with kill -9, a turn
// published with it down (stored) and found applied, the node restarted, everything stopped.
// About 20 s once built.
func TestClusterLocalScript(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this runs 3 nats-server nodes and 5 workers for about 20 s; go test -run TestClusterLocalScript ./deploy/ runs it")
	}
	requireBash(t)
	_, curlErr := exec.LookPath("curl")
	_, wgetErr := exec.LookPath("wget")
	if curlErr != nil && wgetErr != nil {
		t.Skip("neither curl nor wget is installed: the script probes the nodes' and workers' health endpoints with one of them")
	}
	bin := builtTools(t, composeCommands(t))
	state := filepath.Join(t.TempDir(), "cluster")
	base := freePortBase(t)
	env := scriptEnv("CLUSTER_BIN="+bin, "CLUSTER_DIR="+state, "CLUSTER_PORT="+strconv.Itoa(base), "CLUSTER_TIMEOUT=60")
	// Whatever happens to the run (a timeout kills bash before its trap), down stops what it
	// started.
	t.Cleanup(func() {
		cmd := exec.Command("bash", clusterScript, "down")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s down: %v\n%s", clusterScript, err, out)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", clusterScript)
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s took %s", clusterScript, time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", clusterScript, err, out, logTails(state))
	}
	text := string(out)
	// In order: the first turn applied and found, a node killed, the second turn stored with
	// the node down, then found, the node back, everything stopped.
	want := []string{
		"applied to session acme/local-",
		"I love writing Go, it's my favourite language",
		"==> kill -9 n",
		"stored turn ",
		"I moved to Lisbon last year",
		"==> restart n",
		"demo done",
		"down: 8 processes stopped",
	}
	rest := text
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s printed no %q after the earlier steps:\n%s", clusterScript, w, text)
		}
		rest = rest[i+len(w):]
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("after down, %s is still there (%v)", state, err)
	}
	for _, o := range []int{0, 1, 2, 5000} {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(base+o), time.Second); err == nil {
			c.Close()
			t.Errorf("after down, something still listens on 127.0.0.1:%d", base+o)
		}
	}
}

// TestScriptCommandsCatchMistakes runs the check of the command listing on lines with known
// mistakes, against a fixed flag table.
func TestScriptCommandsCatchMistakes(t *testing.T) {
	set := func(bin string, flags ...string) *flagSet {
		fs := &flagSet{bin: bin, flags: map[string]bool{}, sub: map[string]map[string]bool{}}
		for _, f := range flags {
			fs.flags[f] = true
		}
		return fs
	}
	table := map[string]*flagSet{
		"nats-server": set("nats-server", "name", "port", "jetstream", "routes"),
		"ingest":      set("ingest", "nats", "replicas", "health-listen"),
	}
	flags := func(bin string) (*flagSet, error) {
		if fs, ok := table[bin]; ok {
			return fs, nil
		}
		return nil, fmt.Errorf("no binary %q was built from cmd/", bin)
	}
	listing := strings.Join([]string{
		"/b/nats-server --name n1 --port 4222 --jetstream --store-dir /d/n1",
		"/b/ingest --nats nats://127.0.0.1:4222 --replicas=3 --health-listen 127.0.0.1:9222",
		"/b/ingest --nats nats://127.0.0.1:4222 --replica 3",
		"/elsewhere/retriever --nats nats://127.0.0.1:4222",
		"/b/gateway --nats nats://127.0.0.1:4222",
	}, "\n")
	seen := map[string]bool{}
	problems := checkScriptCommands(listing, "/b", flags, seen)
	for _, want := range []string{
		"nats-server has no flag -store-dir",
		"ingest has no flag -replica ",
		"/elsewhere/retriever --nats nats://127.0.0.1:4222: runs /elsewhere/retriever, not a binary of CLUSTER_BIN",
		`/b/gateway --nats nats://127.0.0.1:4222: no binary "gateway" was built`,
	} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem reported like %q; got:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 4 {
		t.Errorf("got %d problems, want 4 (the good lines pass):\n%s", len(problems), strings.Join(problems, "\n"))
	}
	if !seen["nats-server"] || !seen["ingest"] {
		t.Errorf("seen %v, want nats-server and ingest", seen)
	}
}
