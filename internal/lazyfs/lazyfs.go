// Package lazyfs is a FUSE filesystem for tests that forgets, on demand, everything that was not
// synced: a power cut, staged. It passes every operation through to a backing directory, as a
// loopback filesystem does, and keeps beside it the state a disk would have kept, which Cut
// restores (the model of LazyFS, github.com/dsrhaslab/lazyfs, which etcd's robustness tests
// use, made stricter for directories).
//
// The model, exactly:
//
//   - File data. A write reaches the backing file at once (reads see it, as they see the page
//     cache) and is remembered as unsynced. fsync or fdatasync of the file makes its content and
//     size durable: everything written to it, through any descriptor, before the call. A
//     truncation (ftruncate, truncate, O_TRUNC) is durable the same way.
//   - Directory entries. Creating a file, directory or symbolic link, a hard link, a rename, an
//     unlink or a rmdir changes the backing directory at once and is remembered as unsynced.
//     Syncing a directory makes its entries durable as they are at that moment: each name then
//     points at the file it names (a new file with no synced data durably exists, empty; a new
//     directory durably exists with none of its own entries synced). Syncing a directory syncs
//     no data of its files. When a directory is synced depends on Options.Entries:
//     DirSync (the default, POSIX's letter): only by fsync of the directory itself; a file
//     created, written and fsynced whose directory was never fsynced does not survive a cut.
//     AnySync (a journaling filesystem, such as ext4 with data=ordered or XFS, which commits
//     metadata in order): every directory changed since the last sync is synced by the next
//     fsync or fdatasync of any file or directory of the filesystem, before that call returns.
//     Neither model makes another file's data durable: a journal's commit of a file's size
//     with its data (ext4's data=ordered) is not modelled, so a cut loses at least what a real
//     journaling filesystem would.
//     A rename between two directories is durable in each directory when that directory is
//     synced; a file whose old and new names both became durable survives a cut under both (as
//     a hard link).
//   - Cut drops every unsynced write, truncation and entry: the backing directory is rebuilt
//     from what was synced. What the backing directory held when it was mounted counts as
//     synced. Ownership, times and extended attributes are not modelled (a file's mode is
//     taken when its entry or data is synced); fallocate counts as a write of its range;
//     copy_file_range is refused (ENOTSUP), so the kernel falls back to read and write, and so
//     is O_TMPFILE (EOPNOTSUPP).
//   - Nothing reaches the real disk with a sync: the model is the disk, kept in files
//     (dir/synced), so a test costs no disk flushes.
//
// A cut unmounts the filesystem, so every process using it must have exited first (a power cut
// kills them all: kill them with SIGKILL, then Cut), and mounts it again. FS also counts the
// syncs it serves per path (Syncs), which shows what an application syncs and how often.
//
// Mounting needs /dev/fuse and either root or fusermount3 (Debian's fuse3); Available says
// whether this machine can, and why not.
package lazyfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Available reports whether a lazyfs can be mounted here: nil, or an error that says what is
// missing (/dev/fuse, or fusermount3 when not running as root).
func Available() error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("lazyfs: /dev/fuse is not available: %w", err)
	}
	if os.Geteuid() == 0 {
		return nil
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		return errors.New("lazyfs: not root and fusermount3 is not installed (apt-get install fuse3)")
	}
	return nil
}

// Entries says when changed directory entries become durable.
type Entries int

const (
	// DirSync makes a directory's entries durable when the directory is fsynced (POSIX).
	DirSync Entries = iota
	// AnySync makes every changed directory's entries durable at the next fsync or fdatasync of
	// any file or directory, as a journaling filesystem commits metadata in order.
	AnySync
)

// String is the name of the model.
func (e Entries) String() string {
	switch e {
	case DirSync:
		return "dirsync"
	case AnySync:
		return "anysync"
	}
	return fmt.Sprintf("Entries(%d)", int(e))
}

// Options configures a lazyfs.
type Options struct {
	// Entries is when directory entries become durable (default DirSync).
	Entries Entries
}

// Syncs counts the syncs of one path: fsync and fdatasync of a file, fsync of a directory.
type Syncs struct {
	Fsync     int
	Fdatasync int
	Dir       int
}

// Total is the number of syncs of every kind.
func (s Syncs) Total() int { return s.Fsync + s.Fdatasync + s.Dir }

// FS is a mounted lazyfs. Its methods are safe for concurrent use.
type FS struct {
	live, synced, mountpoint string
	opts                     Options
	busyWait                 time.Duration // how long an unmount is retried while busy

	// cutMu is held for writing while the filesystem is unmounted and rebuilt.
	cutMu  sync.Mutex
	server *fuse.Server

	mu     sync.Mutex // guards what follows, and every object's entries, mode and target
	nextID uint64
	objs   map[uint64]*object
	byIno  map[inoKey]*object
	root   *object
	syncs  map[string]*Syncs
	cuts   int
	// dirty holds the directories whose entries changed since the last sync (AnySync).
	dirty map[*node]struct{}
}

// Mount mounts a lazyfs at mountpoint (an existing empty directory) and returns it. dir holds
// its state: dir/live is the backing directory (created if missing; what it holds counts as
// synced) and dir/synced what a disk would have kept. Unmount it when done.
func Mount(dir, mountpoint string, opts Options) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.Entries != DirSync && opts.Entries != AnySync {
		return nil, fmt.Errorf("lazyfs: Options.Entries %v: want DirSync or AnySync", opts.Entries)
	}
	f := &FS{
		opts:       opts,
		dirty:      map[*node]struct{}{},
		live:       filepath.Join(dir, "live"),
		synced:     filepath.Join(dir, "synced"),
		mountpoint: mountpoint,
		busyWait:   10 * time.Second,
		objs:       map[uint64]*object{},
		byIno:      map[inoKey]*object{},
		syncs:      map[string]*Syncs{},
	}
	if err := os.MkdirAll(f.live, 0o755); err != nil {
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	if err := os.RemoveAll(f.synced); err != nil {
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	if err := os.MkdirAll(f.synced, 0o755); err != nil {
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	if err := f.adopt(); err != nil {
		return nil, err
	}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

// Mountpoint is where the filesystem is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// Cuts is the number of cuts made so far.
func (f *FS) Cuts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cuts
}

// Cut stages a power cut: it unmounts the filesystem, rebuilds the backing directory from what
// was synced (every unsynced write and directory entry is gone) and mounts it again. Every
// process with a file open on it must have exited (kill them first); the unmount is retried
// for up to 10 seconds while the mount is busy, then Cut fails.
func (f *FS) Cut() error {
	f.cutMu.Lock()
	defer f.cutMu.Unlock()
	if err := f.unmount(); err != nil {
		return err
	}
	if err := f.restore(); err != nil {
		return err
	}
	f.mu.Lock()
	f.cuts++
	f.dirty = map[*node]struct{}{}
	f.mu.Unlock()
	return f.mount()
}

// Sync makes everything the filesystem holds durable, as sync(1) does: every directory's
// entries and every file's data. It is not counted in Syncs.
func (f *FS) Sync() error {
	f.cutMu.Lock()
	defer f.cutMu.Unlock()
	f.mu.Lock()
	f.dirty = map[*node]struct{}{}
	f.mu.Unlock()
	err := filepath.WalkDir(f.live, func(path string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		in, err := statInfo(-1, path)
		if errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if err != nil {
			return err
		}
		o := f.objectOf(in)
		switch {
		case d.IsDir():
			if err := f.syncDir(o, path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		case d.Type().IsRegular():
			fh, err := os.Open(path)
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			defer fh.Close()
			return f.syncFile(o, int(fh.Fd()))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lazyfs: sync: %w", err)
	}
	return nil
}

// Unmount unmounts the filesystem (retrying for up to 10 seconds while it is busy). The backing
// directory keeps what was written, synced or not.
func (f *FS) Unmount() error {
	f.cutMu.Lock()
	defer f.cutMu.Unlock()
	return f.unmount()
}

// Syncs returns the syncs served so far, by path relative to the mountpoint at the time of the
// sync ("" is the root directory).
func (f *FS) Syncs() map[string]Syncs {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]Syncs, len(f.syncs))
	for p, s := range f.syncs {
		out[p] = *s
	}
	return out
}

func (f *FS) mount() error {
	root := &fs.LoopbackRoot{Path: f.live}
	var st syscall.Stat_t
	if err := syscall.Stat(f.live, &st); err != nil {
		return fmt.Errorf("lazyfs: %w", err)
	}
	root.Dev = uint64(st.Dev)
	rn := &node{LoopbackNode: &fs.LoopbackNode{RootData: root}, fs: f}
	root.RootNode = rn
	second := time.Second
	opts := &fs.Options{
		EntryTimeout: &second,
		AttrTimeout:  &second,
		MountOptions: fuse.MountOptions{
			FsName:      "lazyfs",
			Name:        "lazyfs",
			DirectMount: os.Geteuid() == 0,
			// Every write reaches the filesystem as it is made: no writeback cache in the kernel.
			MaxBackground: 64,
		},
	}
	server, err := fs.Mount(f.mountpoint, rn, opts)
	if err != nil {
		return fmt.Errorf("lazyfs: mounting %s: %w", f.mountpoint, err)
	}
	f.server = server
	return nil
}

func (f *FS) unmount() error {
	if f.server == nil {
		return nil
	}
	deadline := time.Now().Add(f.busyWait)
	for {
		err := f.server.Unmount()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lazyfs: unmounting %s: %w", f.mountpoint, err)
		}
		<-time.After(50 * time.Millisecond)
	}
	f.server.Wait()
	f.server = nil
	return nil
}

// inoKey identifies a backing file: its inode number and birth time (inode numbers are reused).
type inoKey struct {
	ino   uint64
	btime int64
}

// info is what lazyfs needs of a backing file's status.
type info struct {
	key  inoKey
	mode uint32 // type and permission bits
	size int64
}

// statInfo lstats path (fd < 0) or fstats fd.
func statInfo(fd int, path string) (info, error) {
	var x unix.Statx_t
	const mask = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_INO | unix.STATX_SIZE | unix.STATX_BTIME
	var err error
	if fd >= 0 {
		err = unix.Statx(fd, "", unix.AT_EMPTY_PATH, mask, &x)
	} else {
		err = unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, mask, &x)
	}
	if err != nil {
		return info{}, err
	}
	return info{
		key:  inoKey{ino: x.Ino, btime: x.Btime.Sec*1e9 + int64(x.Btime.Nsec)},
		mode: uint32(x.Mode),
		size: int64(x.Size),
	}, nil
}

// object is one file, directory or symbolic link: what is durable of it, and for a file what
// was written since its last sync.
type object struct {
	id   uint64
	kind uint32 // syscall.S_IFREG, S_IFDIR or S_IFLNK

	// mode (permission bits) and target (symbolic links) as synced; entries (directories) as
	// synced. Guarded by FS.mu.
	mode    uint32
	target  string
	entries map[string]*object

	// mu guards the data state of a file.
	mu      sync.Mutex
	size    int64  // durable size
	spans   []span // ranges written since the last sync
	minSize int64  // smallest size truncated to since the last sync; -1 none
}

type span struct{ off, end int64 }

// wrote records that [off, off+n) was written.
func (o *object) wrote(off, n int64) {
	if n <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.spans = addSpan(o.spans, span{off, off + n})
}

// truncated records a truncation to size.
func (o *object) truncated(size int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.minSize < 0 || size < o.minSize {
		o.minSize = size
	}
}

// addSpan adds s to the sorted, disjoint spans, merging what touches it; past 1,024 spans they
// are merged into one (a sync then copies a little more).
func addSpan(spans []span, s span) []span {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].end >= s.off })
	j := i
	for j < len(spans) && spans[j].off <= s.end {
		s.off = min(s.off, spans[j].off)
		s.end = max(s.end, spans[j].end)
		j++
	}
	out := append(spans[:i:i], s)
	out = append(out, spans[j:]...)
	if len(out) > 1024 {
		out = []span{{out[0].off, out[len(out)-1].end}}
	}
	return out
}

func (f *FS) storePath(o *object) string {
	return filepath.Join(f.synced, strconv.FormatUint(o.id, 10))
}

// newObject makes an object for a live file that nothing durable names yet. f.mu must be held.
func (f *FS) newObject(in info) *object {
	f.nextID++
	o := &object{id: f.nextID, kind: in.mode & syscall.S_IFMT, mode: in.mode & 0o7777, minSize: -1}
	if o.kind == syscall.S_IFDIR {
		o.entries = map[string]*object{}
	}
	f.objs[o.id] = o
	f.byIno[in.key] = o
	return o
}

// objectOf returns the object of a live file, making one if none is known.
func (f *FS) objectOf(in info) *object {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.byIno[in.key]; ok {
		return o
	}
	return f.newObject(in)
}

// syncFile makes the object's data durable: fd is a descriptor of the live file that can read.
func (f *FS) syncFile(o *object, fd int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if o.minSize < 0 && len(o.spans) == 0 && st.Size == o.size {
		return nil
	}
	store, err := os.OpenFile(f.storePath(o), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer store.Close()
	if o.minSize >= 0 && o.minSize < o.size {
		if err := store.Truncate(o.minSize); err != nil {
			return err
		}
	}
	if err := store.Truncate(st.Size); err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for _, s := range o.spans {
		for off := s.off; off < min(s.end, st.Size); {
			n := min(int64(len(buf)), min(s.end, st.Size)-off)
			r, err := syscall.Pread(fd, buf[:n], off)
			if err != nil {
				return err
			}
			if r == 0 {
				break
			}
			if _, err := store.WriteAt(buf[:r], off); err != nil {
				return err
			}
			off += int64(r)
		}
	}
	o.size, o.spans, o.minSize = st.Size, nil, -1
	return nil
}

// syncDir makes the entries of the live directory at path durable as they are now.
func (f *FS) syncDir(o *object, path string) error {
	des, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	entries := make(map[string]*object, len(des))
	for _, de := range des {
		p := filepath.Join(path, de.Name())
		in, err := statInfo(-1, p)
		if errors.Is(err, syscall.ENOENT) {
			continue // removed meanwhile
		}
		if err != nil {
			return err
		}
		c := f.objectOf(in)
		if c.kind == syscall.S_IFLNK {
			t, err := os.Readlink(p)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			f.mu.Lock()
			c.target = t
			f.mu.Unlock()
		}
		entries[de.Name()] = c
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o.entries = entries
	return nil
}

// changed records that the entries of directory n changed.
func (f *FS) changed(n *node) {
	if f.opts.Entries != AnySync {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirty[n] = struct{}{}
}

// commit syncs the entries of every directory changed since the last sync (AnySync).
func (f *FS) commit() error {
	if f.opts.Entries != AnySync {
		return nil
	}
	f.mu.Lock()
	dirty := f.dirty
	f.dirty = map[*node]struct{}{}
	f.mu.Unlock()
	for n := range dirty {
		p := n.backing()
		st, err := statInfo(-1, p)
		if errors.Is(err, syscall.ENOENT) {
			continue // removed since: its parent changed too
		}
		if err != nil {
			return err
		}
		if err := f.syncDir(f.objectOf(st), p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (f *FS) countSync(path string, dir bool, flags uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.syncs[path]
	if s == nil {
		s = &Syncs{}
		f.syncs[path] = s
	}
	switch {
	case dir:
		s.Dir++
	case flags&1 != 0: // FUSE_FSYNC_FDATASYNC
		s.Fdatasync++
	default:
		s.Fsync++
	}
}

// adopt takes what the backing directory holds as synced: an object for each file, directory
// and link, its content copied into the synced store.
func (f *FS) adopt() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs, f.byIno = map[uint64]*object{}, map[inoKey]*object{}
	var walk func(path string) (*object, error)
	walk = func(path string) (*object, error) {
		in, err := statInfo(-1, path)
		if err != nil {
			return nil, err
		}
		if o, ok := f.byIno[in.key]; ok {
			return o, nil // a hard link
		}
		o := f.newObject(in)
		switch o.kind {
		case syscall.S_IFDIR:
			des, err := os.ReadDir(path)
			if err != nil {
				return nil, err
			}
			for _, de := range des {
				c, err := walk(filepath.Join(path, de.Name()))
				if err != nil {
					return nil, err
				}
				o.entries[de.Name()] = c
			}
		case syscall.S_IFLNK:
			if o.target, err = os.Readlink(path); err != nil {
				return nil, err
			}
		case syscall.S_IFREG:
			if err := copyFile(path, f.storePath(o), 0o600); err != nil {
				return nil, err
			}
			o.size = in.size
		default:
			return nil, fmt.Errorf("lazyfs: %s: only files, directories and symbolic links are modelled", path)
		}
		return o, nil
	}
	root, err := walk(f.live)
	if err != nil {
		return fmt.Errorf("lazyfs: %w", err)
	}
	f.root = root
	return nil
}

// restore rebuilds the backing directory from what was synced, then adopts it. The filesystem
// must be unmounted.
func (f *FS) restore() error {
	des, err := os.ReadDir(f.live)
	if err != nil {
		return fmt.Errorf("lazyfs: %w", err)
	}
	for _, de := range des {
		if err := os.RemoveAll(filepath.Join(f.live, de.Name())); err != nil {
			return fmt.Errorf("lazyfs: %w", err)
		}
	}
	f.mu.Lock()
	made := map[*object]string{f.root: f.live}
	var build func(o *object, path string) error
	build = func(dir *object, path string) error {
		names := make([]string, 0, len(dir.entries))
		for n := range dir.entries {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			o, p := dir.entries[name], filepath.Join(path, name)
			if first, ok := made[o]; ok {
				if o.kind == syscall.S_IFDIR {
					continue // a directory durably named twice keeps its first name
				}
				if err := os.Link(first, p); err != nil {
					return err
				}
				continue
			}
			made[o] = p
			switch o.kind {
			case syscall.S_IFDIR:
				if err := os.Mkdir(p, os.FileMode(o.mode&0o777)|0o700); err != nil {
					return err
				}
				if err := build(o, p); err != nil {
					return err
				}
			case syscall.S_IFLNK:
				if err := os.Symlink(o.target, p); err != nil {
					return err
				}
			default:
				if err := materialize(f.storePath(o), p, o.size, o.mode); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = build(f.root, f.live)
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("lazyfs: restoring: %w", err)
	}
	if err := os.RemoveAll(f.synced); err != nil {
		return fmt.Errorf("lazyfs: %w", err)
	}
	if err := os.MkdirAll(f.synced, 0o755); err != nil {
		return fmt.Errorf("lazyfs: %w", err)
	}
	return f.adopt()
}

// materialize writes the first size bytes of the synced store file (absent: nothing synced)
// to path.
func materialize(store, path string, size int64, mode uint32) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(mode&0o777)|0o600)
	if err != nil {
		return err
	}
	in, err := os.Open(store)
	if errors.Is(err, os.ErrNotExist) {
		return errors.Join(out.Truncate(size), out.Close())
	}
	if err != nil {
		out.Close()
		return err
	}
	defer in.Close()
	_, err = io.Copy(out, io.LimitReader(in, size))
	return errors.Join(err, out.Truncate(size), out.Close())
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
