package retrieve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Where stored views are kept: the view bucket, or files of a directory (Config.ViewDir).
//
// The bucket is shared by every retriever of a deployment and replicated with it. Reading a
// value makes the server load the whole message block the value is in (4 MB for a KV stream,
// whatever its limits; a view is a few hundred KB) into a fresh buffer, check it, copy the value
// out twice and send it: measured black-box (BenchmarkColdUserBlackBox), a third of a cold
// user's CPU and most of the first query after a start, whose buffers are all fresh memory; and
// the server drops the block's cache at every garbage collection, so the next user's view in
// the same block loads it again. A file is read as the view's bytes, into memory of the caller's.
//
// memoryd with its own server keeps them as files under --data (views/): one retriever, on the
// machine that holds the data. Files follow the rules of the bucket's values (snapshot.go):
// a cache, used only while each session's header still matches; a forget removes the user's
// file (after any write in flight), and a lost forget announcement removes every file, since it
// may have named anyone and no other process purges this directory. They are not synced: after
// an unclean stop the daemon empties the directory before the retriever starts (a torn file
// would only fail to decode, but a header lost with a cut and written again could match a
// stale view), as the recovery purges the bucket.

// viewBackend holds the stored views' encoded values.
type viewBackend interface {
	// get returns k's value; an error when there is none or it cannot be read.
	get(ctx context.Context, k userKey) ([]byte, error)
	put(ctx context.Context, k userKey, data []byte) error
	// purge removes k's value; none is not an error.
	purge(ctx context.Context, k userKey) error
	// purgeAll removes every value, when whose forget an announcement named is not known; a
	// backend whose values the forget itself purges (the bucket) keeps them.
	purgeAll(ctx context.Context) error
	// name names the store in integrity reports.
	name() string
}

// viewBucket is the view bucket (events.Topology.ViewBucket), key "<tenant>.<user>".
type viewBucket struct{ kv jetstream.KeyValue }

func (b viewBucket) get(ctx context.Context, k userKey) ([]byte, error) {
	e, err := b.kv.Get(ctx, viewKey(k))
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

func (b viewBucket) put(ctx context.Context, k userKey, data []byte) error {
	_, err := b.kv.Put(ctx, viewKey(k), data)
	return err
}

func (b viewBucket) purge(ctx context.Context, k userKey) error { return b.kv.Purge(ctx, viewKey(k)) }

// purgeAll keeps the values: package forget purges a forgotten user's value itself.
func (viewBucket) purgeAll(context.Context) error { return nil }

func (b viewBucket) name() string { return b.kv.Bucket() }

// viewFiles keeps each user's value in a file of dir named by a hash of the tenant and the user
// (a user id may hold any character a key allows, "/" and ".." among them).
type viewFiles struct{ dir string }

// ViewFileExt ends the name of a view's file in a Config.ViewDir; temporary files start with
// viewTempPrefix.
const (
	ViewFileExt    = ".view"
	viewTempPrefix = "tmp-"
)

// openViewFiles makes dir if need be and removes the temporary files a stop left.
func openViewFiles(dir string) (viewFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return viewFiles{}, fmt.Errorf("stored views: %w", err)
	}
	f := viewFiles{dir: dir}
	if err := f.remove(func(name string) bool { return strings.HasPrefix(name, viewTempPrefix) }); err != nil {
		return viewFiles{}, err
	}
	return f, nil
}

// EmptyViewDir removes every stored view of a Config.ViewDir (the daemon's, after an unclean
// stop). A directory that does not exist is empty.
func EmptyViewDir(dir string) error {
	err := viewFiles{dir: dir}.remove(func(string) bool { return true })
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// RemoveViewFile removes the stored view of tenant's user from a Config.ViewDir, if there is one:
// a forget's part (the daemon's), so the forget itself erases the file, as it purges the bucket.
func RemoveViewFile(dir, tenant, user string) error {
	return viewFiles{dir: dir}.purge(context.Background(), userKey{tenant, user})
}

func (f viewFiles) path(k userKey) string {
	sum := sha256.Sum256([]byte(k.tenant + "\x00" + k.user))
	return filepath.Join(f.dir, hex.EncodeToString(sum[:])+ViewFileExt)
}

func (f viewFiles) get(_ context.Context, k userKey) ([]byte, error) { return os.ReadFile(f.path(k)) }

// put writes a temporary file and renames it over the user's: a reader sees the old value or
// the new one, never part of one.
func (f viewFiles) put(_ context.Context, k userKey, data []byte) error {
	tmp, err := os.CreateTemp(f.dir, viewTempPrefix+"*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path(k))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

func (f viewFiles) purge(_ context.Context, k userKey) error {
	if err := os.Remove(f.path(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (f viewFiles) purgeAll(context.Context) error {
	return f.remove(func(name string) bool { return strings.HasSuffix(name, ViewFileExt) })
}

func (f viewFiles) name() string { return f.dir }

// remove removes the regular files of dir whose names match.
func (f viewFiles) remove(match func(name string) bool) error {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return fmt.Errorf("stored views: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.Type().IsRegular() && match(e.Name()) {
			if err := os.Remove(filepath.Join(f.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stored views: %w", err)
	}
	return nil
}
