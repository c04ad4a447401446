package datadir_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/datadir"
	"github.com/agentmem/agentmem/internal/lazyfs"
)

// old is the modification time write gives what it writes: a file written a while before a
// Sync (one changed within the last moment is synced again by the next Sync).
var old = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// write writes content to root/rel, creating its directories, and dates the file and every
// directory from root down to it at old.
func write(t *testing.T, root, rel, content string) {
	t.Helper()
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for p := path; ; p = filepath.Dir(p) {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		if p == root {
			return
		}
	}
}

// A Syncer syncs everything the first time, then only what changed: a file written since, a
// file replaced by a rename, a directory whose entries changed.
func TestSyncerSyncsWhatChanged(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a/1.blk", "one")
	write(t, root, "a/2.blk", "two")
	write(t, root, "b/o.dat", "state")
	s := datadir.NewSyncer(root)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if s.Synced != 7 || s.Skipped != 0 { // 3 files, 3 directories, the root's parent
		t.Fatalf("first sync: %d synced, %d unchanged; want 7 and 0", s.Synced, s.Skipped)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if s.Synced != 0 || s.Skipped != 6 {
		t.Fatalf("nothing changed: %d synced, %d unchanged; want 0 and 6", s.Synced, s.Skipped)
	}
	write(t, root, "a/2.blk", "two, longer")
	write(t, root, "b/o.dat.tmp", "state")
	if err := os.Rename(filepath.Join(root, "b", "o.dat.tmp"), filepath.Join(root, "b", "o.dat")); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	// 2.blk (its size), o.dat (another file now), b (its entries): three.
	if s.Synced != 3 {
		t.Fatalf("after one write and one rename: %d synced, want 3", s.Synced)
	}
	// A file changed a moment ago is synced again next time: the clock may not have moved.
	if err := os.WriteFile(filepath.Join(root, "a", "1.blk"), []byte("ONE"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if s.Synced == 0 {
			t.Fatal("a file written a moment before the sync was not synced twice")
		}
	}
}

// On a filesystem that forgets what was not synced (lazyfs), what a Syncer synced survives a
// power cut, and so does the clean-stop mark; what was written after it does not.
func TestSyncerMakesWritesDurable(t *testing.T) {
	if err := lazyfs.Available(); err != nil {
		t.Skipf("a staged power cut needs a FUSE mount: %v", err)
	}
	dir := t.TempDir()
	mp := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := lazyfs.Mount(filepath.Join(dir, "lazy"), mp, lazyfs.Options{Entries: lazyfs.DirSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Unmount() })
	data := filepath.Join(mp, "data")
	write(t, mp, "data/streams/S/msgs/1.blk", "synced")
	if err := datadir.MarkClean(data); err != nil {
		t.Fatal(err)
	}
	write(t, mp, "data/streams/S/msgs/2.blk", "not synced")
	if err := fs.Cut(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(data, "streams", "S", "msgs", "1.blk")); err != nil || string(b) != "synced" {
		t.Fatalf("the synced block after the cut: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(data, "streams", "S", "msgs", "2.blk")); !os.IsNotExist(err) {
		t.Fatalf("a block written after the sync survived the cut (%v): the filesystem does not forget", err)
	}
	clean, err := datadir.TakeClean(data)
	if err != nil || !clean {
		t.Fatalf("the clean-stop mark did not survive the cut (%v)", err)
	}
	// Taking the mark away is durable too: a cut right after the start counts the run as unclean.
	if err := fs.Cut(); err != nil {
		t.Fatal(err)
	}
	if clean, err := datadir.TakeClean(data); err != nil || clean {
		t.Fatalf("the clean-stop mark came back after a cut (%v)", err)
	}
}
