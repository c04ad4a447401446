package datadir_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/datadir"
)

func TestSecondHolderFailsWithThePIDAndTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // not there yet: Acquire creates it
	first, err := datadir.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := datadir.Acquire(dir)
	if !errors.Is(err, datadir.ErrLocked) {
		_ = second.Release()
		t.Fatalf("second Acquire: %v, want ErrLocked", err)
	}
	pid := strconv.Itoa(os.Getpid())
	if !strings.Contains(err.Error(), "process "+pid) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("error %q does not name the holder's pid %s and the directory %s", err, pid, dir)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	third, err := datadir.Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	defer third.Release()
	b, err := os.ReadFile(filepath.Join(dir, datadir.LockName))
	if err != nil || strings.TrimSpace(string(b)) != pid {
		t.Fatalf("lock file holds %q (%v), want this process's id %s", b, err, pid)
	}
}

func TestAcquireNeedsADirectory(t *testing.T) {
	if _, err := datadir.Acquire(""); err == nil {
		t.Fatal("Acquire(\"\") succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := datadir.Acquire(file); err == nil || errors.Is(err, datadir.ErrLocked) {
		t.Fatalf("Acquire of a regular file: %v, want an error that is not ErrLocked", err)
	}
}

// holderEnv makes the test binary a helper process that takes the lock of the directory it
// names, says "locked" on standard output and waits to be killed.
const holderEnv = "DATADIR_TEST_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holderEnv); dir != "" {
		l, err := datadir.Acquire(dir)
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		defer l.Release() // never runs: the helper is killed
		os.Stdout.WriteString("locked\n")
		select {}
	}
	os.Exit(m.Run())
}

// A holder killed with SIGKILL runs no cleanup; the kernel frees its lock all the same.
func TestKilledHolderFreesTheLock(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	_, err = datadir.Acquire(dir)
	if !errors.Is(err, datadir.ErrLocked) || !strings.Contains(err.Error(), "process "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("Acquire while the helper holds the lock: %v, want ErrLocked naming pid %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	_ = cmd.Wait() // the process is gone once Wait returns, and its descriptors with it
	l, err := datadir.Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	_ = l.Release()
}
