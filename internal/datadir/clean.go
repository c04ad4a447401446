package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// CleanName is the clean-stop mark's name inside the data directory: memoryd writes it when it
// stopped cleanly, with everything under the directory synced to disk, and removes it when it
// starts, so that a start that does not find it knows the last run ended uncleanly (a crash, a
// kill -9, a power cut).
const CleanName = "memoryd.clean"

// TakeClean reports whether dir holds the clean-stop mark and removes it, durably (the directory
// is synced after the removal), so that this run counts as unclean until MarkClean. Call it with
// the directory's lock held and before anything else writes there.
func TakeClean(dir string) (bool, error) {
	path := filepath.Join(dir, CleanName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("datadir: reading the clean-stop mark: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return false, fmt.Errorf("datadir: removing the clean-stop mark: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return false, fmt.Errorf("datadir: removing the clean-stop mark: %w", err)
	}
	return true, nil
}

// MarkClean syncs every file and directory under dir to disk, then writes the clean-stop mark
// and syncs it and dir. Call it with the directory's lock still held, once nothing writes there
// any more (the server has shut down).
func MarkClean(dir string) error {
	if err := NewSyncer(dir).Sync(); err != nil {
		return err
	}
	path := filepath.Join(dir, CleanName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("datadir: writing the clean-stop mark: %w", err)
	}
	_, werr := fmt.Fprintf(f, "stopped cleanly at %s by process %d\n", time.Now().UTC().Format(time.RFC3339Nano), os.Getpid())
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("datadir: writing the clean-stop mark: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("datadir: writing the clean-stop mark: %w", err)
	}
	return nil
}
