package daemon_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The tests that reload the server's configuration while memoryd runs.
//
// nats-server v2.15.3 (the newest the module proxy serves) reads its options without their lock
// while it answers a direct get (stream.go, getDirectRequest: s.opts.MaxPending) and a reload
// writes them under the lock. The race detector reports that pair whenever a direct get ever ran
// before a reload, whatever the time between them; it is the server's, and harmless outside the
// detector (a pointer read). So under -race these tests run in a second `go test` without it.
var reloadTests = []string{"TestRevokedCredentialIsRefused", "TestTenantAddedAtRuntime"}

// skipUnderRace skips a reload test in a -race binary: TestReloadsWithoutTheRaceDetector runs it.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("runs in TestReloadsWithoutTheRaceDetector: nats-server v2.15.3 races on its options between a direct get and a reload")
	}
}

func TestReloadsWithoutTheRaceDetector(t *testing.T) {
	if !raceDetector {
		t.Skip("this binary has no race detector: the reload tests run directly")
	}
	if testing.Short() {
		t.Skip("builds and runs the package again without -race; skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to run the reload tests without -race: " + err.Error())
	}
	cmd := exec.Command(goBin, "test", "-count=1", "-run", "^("+strings.Join(reloadTests, "|")+")$", "-v", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the reload tests failed: %v\n%s", err, out)
	}
	for _, name := range reloadTests {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Fatalf("%s did not pass:\n%s", name, out)
		}
	}
}
