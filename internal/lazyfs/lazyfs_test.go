package lazyfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func fdatasync(fh *os.File) error { return syscall.Fdatasync(int(fh.Fd())) }

// mount mounts a lazyfs for the test, or skips the test saying why this machine cannot.
func mount(t *testing.T, opts ...Options) (*FS, string) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("needs FUSE: %v", err)
	}
	dir := t.TempDir()
	mp := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	f, err := Mount(filepath.Join(dir, "state"), mp, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, mp
}

func write(t *testing.T, path, s string, sync bool) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := fh.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, s string, sync bool) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := fh.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

func syncDir(t *testing.T, path string) {
	t.Helper()
	d, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func cut(t *testing.T, f *FS) {
	t.Helper()
	if err := f.Cut(); err != nil {
		t.Fatal(err)
	}
}

// content is the file's content, or "<absent>".
func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWrittenButNotSyncedIsLost(t *testing.T) {
	f, mp := mount(t)
	p := filepath.Join(mp, "a")
	write(t, p, "", false)
	syncDir(t, mp) // the name is durable, no data is
	appendTo(t, p, "unsynced", false)
	if got := content(t, p); got != "unsynced" {
		t.Fatalf("before the cut: %q", got)
	}
	cut(t, f)
	if got := content(t, p); got != "" {
		t.Fatalf("after the cut the file holds %q; want it empty (nothing was synced)", got)
	}
}

func TestSyncedSurvivesAndOnlyThat(t *testing.T) {
	for _, tc := range []struct {
		name string
		sync func(t *testing.T, fh *os.File)
	}{
		{"fsync", func(t *testing.T, fh *os.File) {
			if err := fh.Sync(); err != nil {
				t.Fatal(err)
			}
		}},
		{"fdatasync", func(t *testing.T, fh *os.File) {
			if err := fdatasync(fh); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, mp := mount(t)
			p := filepath.Join(mp, "log")
			fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			syncDir(t, mp)
			if _, err := fh.WriteString("one,two,"); err != nil {
				t.Fatal(err)
			}
			tc.sync(t, fh)
			if _, err := fh.WriteString("three,"); err != nil {
				t.Fatal(err)
			}
			// An overwrite of synced bytes, not synced, is undone too.
			if _, err := fh.WriteAt([]byte("ONE"), 0); err != nil {
				t.Fatal(err)
			}
			fh.Close()
			cut(t, f)
			if got := content(t, p); got != "one,two," {
				t.Fatalf("after the cut: %q; want %q (what was synced)", got, "one,two,")
			}
			// The filesystem works on after a cut, and a second cut keeps what was synced since.
			appendTo(t, p, "four,", true)
			appendTo(t, p, "five,", false)
			cut(t, f)
			if got := content(t, p); got != "one,two,four," {
				t.Fatalf("after the second cut: %q", got)
			}
			syncs := f.Syncs()["log"]
			if syncs.Total() != 2 || (tc.name == "fdatasync") != (syncs.Fdatasync == 1) {
				t.Fatalf("syncs of log: %+v", syncs)
			}
		})
	}
}

func TestCreatedButDirectoryNotSyncedIsLost(t *testing.T) {
	f, mp := mount(t)
	p := filepath.Join(mp, "new")
	write(t, p, "data", true) // data synced, the entry not
	cut(t, f)
	if got := content(t, p); got != "<absent>" {
		t.Fatalf("a file whose directory was never synced: %q after the cut; want it absent", got)
	}
	write(t, p, "data", true)
	syncDir(t, mp)
	cut(t, f)
	if got := content(t, p); got != "data" {
		t.Fatalf("after syncing the file and its directory: %q", got)
	}
}

func TestDirectoryEntries(t *testing.T) {
	f, mp := mount(t)
	a, b := filepath.Join(mp, "a"), filepath.Join(mp, "b")
	write(t, a, "A", true)
	syncDir(t, mp)

	// A rename not synced by the directory: the old name comes back.
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	cut(t, f)
	if ga, gb := content(t, a), content(t, b); ga != "A" || gb != "<absent>" {
		t.Fatalf("unsynced rename: a=%q b=%q; want a=A, b absent", ga, gb)
	}
	// Synced, it stays.
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mp)
	cut(t, f)
	if ga, gb := content(t, a), content(t, b); ga != "<absent>" || gb != "A" {
		t.Fatalf("synced rename: a=%q b=%q", ga, gb)
	}
	// An unlink not synced: the file comes back with its synced data.
	appendTo(t, b, "-more", false)
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	cut(t, f)
	if gb := content(t, b); gb != "A" {
		t.Fatalf("unsynced unlink: b=%q; want A", gb)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mp)
	cut(t, f)
	if gb := content(t, b); gb != "<absent>" {
		t.Fatalf("synced unlink: b=%q", gb)
	}
}

func TestAtomicReplace(t *testing.T) {
	f, mp := mount(t)
	p, tmp := filepath.Join(mp, "meta"), filepath.Join(mp, "meta.tmp")
	write(t, p, "v1", true)
	syncDir(t, mp)
	// write tmp, fsync, rename over: without the directory's sync the old version is back.
	write(t, tmp, "v2", true)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	cut(t, f)
	if got := content(t, p); got != "v1" {
		t.Fatalf("replaced without a directory sync: %q; want v1", got)
	}
	write(t, tmp, "v2", true)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mp)
	cut(t, f)
	if got, gt := content(t, p), content(t, tmp); got != "v2" || gt != "<absent>" {
		t.Fatalf("replaced with a directory sync: meta=%q meta.tmp=%q", got, gt)
	}
}

func TestTruncate(t *testing.T) {
	f, mp := mount(t)
	p := filepath.Join(mp, "t")
	write(t, p, "0123456789", true)
	syncDir(t, mp)
	if err := os.Truncate(p, 4); err != nil {
		t.Fatal(err)
	}
	cut(t, f)
	if got := content(t, p); got != "0123456789" {
		t.Fatalf("unsynced truncate: %q", got)
	}
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(6); err != nil { // grows again: zeros, not the old bytes
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	cut(t, f)
	if got := content(t, p); got != "0123\x00\x00" {
		t.Fatalf("synced truncate to 4 then 6: %q", got)
	}
	// O_TRUNC, then a sync, empties it.
	write(t, p, "", true)
	cut(t, f)
	if got := content(t, p); got != "" {
		t.Fatalf("synced O_TRUNC: %q", got)
	}
}

func TestSubdirectories(t *testing.T) {
	f, mp := mount(t)
	d := filepath.Join(mp, "streams", "T")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "1.blk"), "msg", true)
	syncDir(t, d) // the file's entry in T is durable, T's in streams and streams' in the root are not
	cut(t, f)
	if _, err := os.Stat(filepath.Join(mp, "streams")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a directory whose parent was never synced survived the cut: %v", err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "1.blk"), "msg", true)
	syncDir(t, d)
	syncDir(t, filepath.Dir(d))
	syncDir(t, mp)
	cut(t, f)
	if got := content(t, filepath.Join(d, "1.blk")); got != "msg" {
		t.Fatalf("every level synced: %q", got)
	}
	syncs := f.Syncs()
	var paths []string
	for p, s := range syncs {
		if s.Dir > 0 {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	if want := []string{"", "streams", "streams/T"}; !slices.Equal(paths, want) {
		t.Fatalf("directories synced: %q; want %q", paths, want)
	}
}

func TestWhatWasThereCountsAsSynced(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("needs FUSE: %v", err)
	}
	dir := t.TempDir()
	live := filepath.Join(dir, "state", "live")
	if err := os.MkdirAll(filepath.Join(live, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(live, "sub", "f"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/f", filepath.Join(live, "link")); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Mount(filepath.Join(dir, "state"), mp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	}()
	appendTo(t, filepath.Join(mp, "sub", "f"), " and after", false)
	cut(t, f)
	if got := content(t, filepath.Join(mp, "link")); got != "before" {
		t.Fatalf("through the link after the cut: %q", got)
	}
}

func TestLargeWrites(t *testing.T) {
	f, mp := mount(t)
	p := filepath.Join(mp, "big")
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, many FUSE writes
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	syncDir(t, mp)
	if _, err := fh.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(want); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	cut(t, f)
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("after the cut: %d bytes; want the %d synced", len(got), len(want))
	}
}

func TestCutWhileBusyFails(t *testing.T) {
	f, mp := mount(t)
	fh, err := os.Create(filepath.Join(mp, "open"))
	if err != nil {
		t.Fatal(err)
	}
	f.busyWait = 200 * time.Millisecond // not the 10 s Cut waits for a busy mount
	err = f.Cut()
	fh.Close()
	if err == nil {
		t.Fatal("a cut with a file open succeeded; want an error saying the mount is busy")
	}
	t.Log(err)
	// The filesystem is still mounted and usable.
	write(t, filepath.Join(mp, "after"), "x", true)
}

// With AnySync, as on a journaling filesystem, any sync makes every earlier change of a
// directory durable, and nothing else.
func TestJournaledEntries(t *testing.T) {
	f, mp := mount(t, Options{Entries: AnySync})
	d := filepath.Join(mp, "streams", "T", "msgs")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	blk := filepath.Join(d, "1.blk")
	write(t, blk, "msg1", true) // the file's fsync commits the directories above it
	write(t, filepath.Join(mp, "unsynced"), "x", false)
	cut(t, f)
	if got := content(t, blk); got != "msg1" {
		t.Fatalf("a new file fsynced in new directories: %q after the cut", got)
	}
	if got := content(t, filepath.Join(mp, "unsynced")); got != "<absent>" {
		t.Fatalf("a file created after the last sync: %q after the cut; want it absent", got)
	}
	// A rename becomes durable with the next sync of anything, not before.
	other := filepath.Join(mp, "other")
	write(t, other, "", true)
	if err := os.Rename(blk, filepath.Join(d, "2.blk")); err != nil {
		t.Fatal(err)
	}
	cut(t, f)
	if got := content(t, blk); got != "msg1" {
		t.Fatalf("a rename not followed by any sync: 1.blk=%q", got)
	}
	if err := os.Rename(blk, filepath.Join(d, "2.blk")); err != nil {
		t.Fatal(err)
	}
	appendTo(t, other, "y", true)
	appendTo(t, filepath.Join(d, "2.blk"), "msg2", false) // data still needs its own sync
	cut(t, f)
	if got, gone := content(t, filepath.Join(d, "2.blk")), content(t, blk); got != "msg1" || gone != "<absent>" {
		t.Fatalf("a rename followed by another file's sync: 2.blk=%q 1.blk=%q; want msg1 and absent", got, gone)
	}
}

func TestSyncAll(t *testing.T) {
	f, mp := mount(t)
	d := filepath.Join(mp, "a", "b")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "f"), "synced by Sync", false)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(d, "f"), " and not this", false)
	write(t, filepath.Join(mp, "later"), "x", false)
	cut(t, f)
	if got, later := content(t, filepath.Join(d, "f")), content(t, filepath.Join(mp, "later")); got != "synced by Sync" || later != "<absent>" {
		t.Fatalf("after Sync, a write and a create, then a cut: f=%q later=%q", got, later)
	}
	if n := len(f.Syncs()); n != 0 {
		t.Fatalf("Sync counted %d paths as synced by the application", n)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("needs FUSE: %v", err)
	}
	dir := t.TempDir()
	if _, err := Mount(filepath.Join(dir, "state"), dir, Options{Entries: 7}); err == nil {
		t.Fatal("Mount accepted Entries(7)")
	}
}

func TestAddSpan(t *testing.T) {
	var s []span
	for _, in := range []span{{10, 20}, {0, 5}, {30, 40}, {20, 25}, {4, 10}, {50, 60}, {35, 55}} {
		s = addSpan(s, in)
	}
	if want := []span{{0, 25}, {30, 60}}; !slices.Equal(s, want) {
		t.Fatalf("spans %v; want %v", s, want)
	}
}
