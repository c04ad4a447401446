// Package datadir guards a data directory so that one process at a time stores in it: two
// embedded NATS servers writing the same JetStream files would corrupt them.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// LockName is the lock file's name inside the data directory. It holds the holder's process id.
const LockName = "memoryd.lock"

// ErrLocked is wrapped by Acquire's error when another holder has the directory.
var ErrLocked = errors.New("datadir: data directory in use")

// Lock is a held data directory lock.
type Lock struct {
	f    *os.File
	dir  string
	once sync.Once
	err  error
}

// Acquire creates dir if it does not exist and takes the exclusive lock of dir/memoryd.lock, then
// writes this process's id into it. It does not wait: when another process (or another Lock of
// this one) holds the directory it fails at once with an error wrapping ErrLocked that names the
// holder's process id and the directory. The operating system releases the lock when the
// process ends, however it ends (kill -9 included), so a crash leaves no stale lock behind.
func Acquire(dir string) (*Lock, error) {
	if dir == "" {
		return nil, errors.New("datadir: the data directory is required")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	held, err := lock(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !held {
		holder := holderOf(f)
		_ = f.Close()
		abs, aerr := filepath.Abs(dir)
		if aerr != nil {
			abs = dir
		}
		return nil, fmt.Errorf("%w: %s is held by process %s (lock file %s): one memoryd per data directory; stop that one, or give this one another data directory",
			ErrLocked, abs, holder, path)
	}
	if err := writePID(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &Lock{f: f, dir: dir}, nil
}

// Dir is the locked directory.
func (l *Lock) Dir() string { return l.dir }

// Release empties the lock file and releases the lock; it is safe to call twice. The file stays:
// removing it could let two processes lock two different files of the same name.
func (l *Lock) Release() error {
	l.once.Do(func() {
		_ = l.f.Truncate(0)
		l.err = l.f.Close() // closing the last descriptor releases the lock
	})
	return l.err
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// holderOf reads the holder's process id from the lock file ("unknown" when it has not written
// it yet).
func holderOf(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return "unknown"
	}
	return strconv.Itoa(pid)
}
