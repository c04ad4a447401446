package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Syncer syncs a directory tree to disk: every regular file and every directory under its root
// (fsync), and from the second Sync on only what changed since the Sync before (by size,
// modification time and file identity). It is what makes writes that were made without a sync
// durable at a moment of memoryd's choosing (a checkpoint, a clean stop: package recovery).
//
// A file changed in the same clock tick as a Sync that read it could look unchanged to the next
// one, so a file modified within recentWindow of a Sync is synced again by the next.
type Syncer struct {
	root  string
	seen  map[string]stamp
	first bool
	// Synced and Skipped count the paths the last Sync synced and found unchanged.
	Synced, Skipped int
}

type stamp struct {
	size  int64
	mtime time.Time
	id    uint64
	dir   bool
}

// recentWindow is how recently modified a path may be for a Sync to sync it again next time.
const recentWindow = 100 * time.Millisecond

// NewSyncer returns a Syncer of the tree under root.
func NewSyncer(root string) *Syncer {
	return &Syncer{root: root, seen: map[string]stamp{}, first: true}
}

// Sync syncs what changed under the root since the last Sync (everything, and the directory that
// holds the root, the first time), files before the directories that hold them. A path removed while it walks is skipped. It fails
// on the first path it cannot sync.
func (s *Syncer) Sync() error {
	start := time.Now()
	s.Synced, s.Skipped = 0, 0
	next := make(map[string]stamp, len(s.seen))
	var dirs []string
	err := filepath.WalkDir(s.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		st := stamp{size: fi.Size(), mtime: fi.ModTime(), id: fileID(fi), dir: d.IsDir()}
		if old, ok := s.seen[path]; ok && old == st {
			next[path] = st
			s.Skipped++
			return nil
		}
		if start.Sub(st.mtime) >= recentWindow {
			next[path] = st
		}
		if d.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		if err := syncFile(path); err != nil {
			return err
		}
		s.Synced++
		return nil
	})
	if err != nil {
		return fmt.Errorf("datadir: syncing %s: %w", s.root, err)
	}
	// The deepest directories first, so that a parent records its children's names last; the
	// first time, the root's parent too, which holds the root's own name.
	if s.first {
		dirs = append([]string{filepath.Dir(s.root)}, dirs...)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syncDir(dirs[i]); err != nil {
			return fmt.Errorf("datadir: syncing %s: %w", dirs[i], err)
		}
		s.Synced++
	}
	s.seen, s.first = next, false
	return nil
}

// syncFile fsyncs the file at path (through a descriptor of its own: fsync makes durable what
// any descriptor wrote). A file removed meanwhile needs nothing.
func syncFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
