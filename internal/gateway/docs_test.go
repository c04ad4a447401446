package gateway_test

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/gateway"
)

// shBlocks returns the fenced ```sh blocks of a Markdown file.
func shBlocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks []string
		cur    []string
		in     bool
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

var curlLine = regexp.MustCompile(`(?m)^\s*curl\s`)

// TestHTTPDocWalkthrough runs the curl commands of docs/http.md, in order, with the real curl
// against a gateway in front of a real agentmem, and checks that each exits 0 with a 2xx.
func TestHTTPDocWalkthrough(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed: the docs/http.md walkthrough needs the real curl binary")
	}
	const token = "doc-token"
	e := start(t, gateway.Config{Tokens: map[string]string{token: "acme"}})
	// Each block runs as it is written, in sh, with curl wrapped so that every call reports its
	// HTTP status and exit code after its output; the wrapper calls the real binary.
	prelude := `curl() { "$CURL_BIN" -w '\n@@status %{http_code}\n' "$@"; echo "@@exit $?"; }` + "\n"
	ran := 0
	for i, block := range shBlocks(t, "../../docs/http.md") {
		calls := len(curlLine.FindAllString(block, -1))
		if calls == 0 {
			continue // not a curl walkthrough block (how to start the gateway)
		}
		cmd := exec.Command("sh", "-c", prelude+block)
		cmd.Env = append(os.Environ(), "AGENTMEM_HTTP="+e.srv.URL, "TOKEN="+token, "CURL_BIN="+curl)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("block %d failed: %v\n%s\n%s", i, err, block, out)
		}
		var bodies []string
		var body strings.Builder
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, "@@status "):
				code, _ := strconv.Atoi(strings.TrimPrefix(line, "@@status "))
				if code < 200 || code > 299 {
					t.Errorf("block %d, call %d: HTTP %d\n%s\n%s", i, len(bodies), code, block, body.String())
				}
			case strings.HasPrefix(line, "@@exit "):
				if line != "@@exit 0" {
					t.Errorf("block %d, call %d: curl %s\n%s", i, len(bodies), line, block)
				}
				bodies = append(bodies, body.String())
				body.Reset()
			default:
				body.WriteString(line + "\n")
			}
		}
		if len(bodies) != calls {
			t.Fatalf("block %d: %d curl calls reported, %d written\n%s", i, len(bodies), calls, out)
		}
		for _, b := range bodies {
			t.Logf("block %d: %s", i, strings.TrimSpace(b))
		}
		if strings.Contains(block, "/retrieve") && !strings.Contains(bodies[0], `"turn-0001"`) {
			t.Errorf("the walkthrough's retrieve does not find the turn it published: %s", bodies[0])
		}
		ran += calls
	}
	if ran < 8 {
		t.Fatalf("ran %d curl commands from docs/http.md, want the whole walkthrough (8)", ran)
	}
}
