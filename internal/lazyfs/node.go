package lazyfs

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node that tells its FS what it changes and serves fsync by syncing the
// model.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeSetattrer   = (*node)(nil)
	_ fs.NodeFsyncer     = (*node)(nil)
)

// WrapChild makes every node of the tree a lazyfs node.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if ln, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: ln, fs: n.fs}
	}
	return ops
}

// backing is the node's path in the backing directory.
func (n *node) backing() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// readable turns a write-only open into a read-write one, so that fsync can read what it
// makes durable through the descriptor it is given.
func readable(flags uint32) uint32 {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags
}

// handle wraps the loopback file of an open.
func (n *node) handle(fh fs.FileHandle, flags uint32) (fs.FileHandle, syscall.Errno) {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh, 0
	}
	fd, ok := lf.PassthroughFd()
	if !ok {
		return nil, syscall.EBADF
	}
	in, err := statInfo(fd, "")
	if err != nil {
		lf.Release(context.Background())
		return nil, fs.ToErrno(err)
	}
	o := n.fs.objectOf(in)
	if flags&syscall.O_TRUNC != 0 {
		o.truncated(0)
	}
	return &file{lf: lf, fd: fd, obj: o}, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ino, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, readable(flags), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	n.fs.changed(n)
	h, errno := n.handle(fh, flags)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return ino, h, fuseFlags, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, readable(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.handle(fh, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return h, fuseFlags, 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var o *object
	if h, ok := f.(*file); ok {
		f, o = h.lf, h.obj
	}
	if errno := n.LoopbackNode.Setattr(ctx, f, in, out); errno != 0 {
		return errno
	}
	if size, ok := in.GetSize(); ok {
		if o == nil {
			st, err := statInfo(-1, n.backing())
			if err != nil {
				return fs.ToErrno(err)
			}
			o = n.fs.objectOf(st)
		}
		o.truncated(int64(size))
	}
	return 0
}

// Fsync serves fsync and fdatasync of a file, and fsync of a directory opened without a
// handle of its own.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	path := n.Path(n.Root())
	if n.IsDir() {
		return n.syncDir(flags)
	}
	n.fs.countSync(path, false, flags)
	h, ok := f.(*file)
	if !ok {
		return syscall.EBADF
	}
	if err := n.fs.commit(); err != nil {
		return fs.ToErrno(err)
	}
	return fs.ToErrno(n.fs.syncFile(h.obj, h.fd))
}

// syncDir makes the directory's entries durable.
func (n *node) syncDir(flags uint32) syscall.Errno {
	n.fs.countSync(n.Path(n.Root()), true, flags)
	if err := n.fs.commit(); err != nil {
		return fs.ToErrno(err)
	}
	p := n.backing()
	st, err := statInfo(-1, p)
	if err != nil {
		return fs.ToErrno(err)
	}
	return fs.ToErrno(n.fs.syncDir(n.fs.objectOf(st), p))
}

// OpendirHandle opens the directory with a handle whose fsync syncs the model.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dir{fh: fh, n: n}, fuseFlags, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.fs.changed(n)
	}
	return ino, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	if errno == 0 {
		n.fs.changed(n)
	}
	return ino, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno == 0 {
		n.fs.changed(n)
	}
	return ino, errno
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		n.fs.changed(n)
	}
	return ino, errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 {
		n.fs.changed(n)
	}
	return errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	errno := n.LoopbackNode.Rmdir(ctx, name)
	if errno == 0 {
		n.fs.changed(n)
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	if errno == 0 {
		n.fs.changed(n)
		if np, ok := newParent.(*node); ok {
			n.fs.changed(np)
		}
	}
	return errno
}

// Tmpfile refuses O_TMPFILE, which the model does not cover.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// CopyFileRange is refused, so that the kernel copies with reads and writes, which are
// recorded.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

// file is an open file: the loopback file's operations, with its writes recorded. It does not
// offer the kernel a passthrough descriptor, so that every write comes through it.
type file struct {
	lf  *fs.LoopbackFile
	fd  int
	obj *object
}

var (
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileGetattrer = (*file)(nil)
	_ fs.FileLseeker   = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
	_ fs.FileGetlker   = (*file)(nil)
	_ fs.FileSetlker   = (*file)(nil)
	_ fs.FileSetlkwer  = (*file)(nil)
)

func (h *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return h.lf.Read(ctx, buf, off)
}

func (h *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, errno := h.lf.Write(ctx, data, off)
	h.obj.wrote(off, int64(n))
	return n, errno
}

func (h *file) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }

func (h *file) Flush(ctx context.Context) syscall.Errno { return h.lf.Flush(ctx) }

func (h *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}

func (h *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.lf.Lseek(ctx, off, whence)
}

func (h *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	errno := h.lf.Allocate(ctx, off, size, mode)
	if errno == 0 {
		h.obj.wrote(int64(off), int64(size))
	}
	return errno
}

func (h *file) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return h.lf.Getlk(ctx, owner, lk, flags, out)
}

func (h *file) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlk(ctx, owner, lk, flags)
}

func (h *file) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlkw(ctx, owner, lk, flags)
}

// dir is an open directory: the loopback directory's listing, and fsync of the model.
type dir struct {
	fh fs.FileHandle
	n  *node
}

var (
	_ fs.FileReaddirenter = (*dir)(nil)
	_ fs.FileSeekdirer    = (*dir)(nil)
	_ fs.FileReleasedirer = (*dir)(nil)
	_ fs.FileFsyncdirer   = (*dir)(nil)
)

func (d *dir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if r, ok := d.fh.(fs.FileReaddirenter); ok {
		return r.Readdirent(ctx)
	}
	return nil, syscall.ENOTSUP
}

func (d *dir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if s, ok := d.fh.(fs.FileSeekdirer); ok {
		return s.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

func (d *dir) Releasedir(ctx context.Context, flags uint32) {
	if r, ok := d.fh.(fs.FileReleasedirer); ok {
		r.Releasedir(ctx, flags)
	}
}

func (d *dir) Fsyncdir(_ context.Context, flags uint32) syscall.Errno { return d.n.syncDir(flags) }
