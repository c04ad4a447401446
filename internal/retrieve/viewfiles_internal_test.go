package retrieve

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/metrics"
)

// A user's file stays inside the directory whatever the user id holds, two users never share
// one, a write replaces the whole value, and a purge removes it (none is not an error).
func TestViewFilesKeepEachUserApart(t *testing.T) {
	dir := t.TempDir()
	f, err := openViewFiles(filepath.Join(dir, "views"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	users := []userKey{{"acme", "ann"}, {"acme", "../../etc/passwd"}, {"acme", "a/b"}, {"acme.a", "b"}, {"acme", "a.b"}, {"globex", "ann"}}
	for i, k := range users {
		if err := f.put(ctx, k, []byte{byte(i)}); err != nil {
			t.Fatalf("%+v: %v", k, err)
		}
		if got := filepath.Dir(f.path(k)); got != f.dir {
			t.Fatalf("%+v is kept in %s, not in %s", k, got, f.dir)
		}
	}
	for i, k := range users {
		if got, err := f.get(ctx, k); err != nil || len(got) != 1 || got[0] != byte(i) {
			t.Fatalf("%+v reads %v (%v), want [%d]", k, got, err, i)
		}
	}
	if err := f.put(ctx, users[0], []byte("longer value")); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.get(ctx, users[0]); string(got) != "longer value" {
		t.Fatalf("after a second write %q", got)
	}
	if err := f.purge(ctx, users[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := f.get(ctx, users[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a purged view reads %v", err)
	}
	if err := f.purge(ctx, users[0]); err != nil {
		t.Fatalf("purging a view that is not there: %v", err)
	}
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(users)-1 {
		t.Fatalf("%d files for %d users' views", len(entries), len(users)-1)
	}
}

// Opening the directory removes the temporary files a stop left behind; EmptyViewDir removes
// every view, and a directory that is not there is empty.
func TestViewDirIsEmptied(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "views")
	if err := EmptyViewDir(dir); err != nil {
		t.Fatalf("emptying a directory that is not there: %v", err)
	}
	f, err := openViewFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.put(context.Background(), userKey{"acme", "ann"}, []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, viewTempPrefix+"123"), []byte("half a view"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err = openViewFiles(dir); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	if got := names(); len(got) != 1 || got[0] != filepath.Base(f.path(userKey{"acme", "ann"})) {
		t.Fatalf("after opening: %v, want ann's view alone", got)
	}
	if err := EmptyViewDir(dir); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("after emptying: %v", got)
	}
}

// A lost forget announcement may have named anyone, and nothing else purges this process's
// files: every stored view goes. The bucket's values stay (package forget purged its user's).
func TestLostForgetRemovesEveryViewFile(t *testing.T) {
	f, err := openViewFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vs := newViewStore(f, 1<<20, zerolog.Nop(), metrics.New())
	ctx := context.Background()
	for _, u := range []string{"ann", "bob"} {
		if err := f.put(ctx, userKey{"acme", u}, []byte(u)); err != nil {
			t.Fatal(err)
		}
	}
	vs.forgotSomeone()
	brokertest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		entries, err := os.ReadDir(f.dir)
		if err != nil {
			return err
		}
		if len(entries) != 0 {
			return errors.New("stored views remain after a lost forget announcement")
		}
		return nil
	})
}
