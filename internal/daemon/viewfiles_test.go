package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/datadir"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/events"
)

// The retriever of a daemon with one replica keeps the users' stored views as files of the data
// directory: a user's cold load writes one, a clean restart keeps it, a forget removes it (before
// it returns), an unclean start (whose files may be torn, or stale against headers the rebuild
// writes again) empties the directory before the retriever starts. With ViewsInBucket the
// directory is not used, and files an earlier run left are removed.
func TestViewFilesLiveInTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := lazyConfig(t, dir, "")
	views := filepath.Join(dir, daemon.ViewDirName)
	files := func() int {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(views, "*.view"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	ctx := context.Background()
	// stored asks about ua (a cold load) and waits until ua's view is a file of the directory.
	stored := func(r *recoveryRun, after string) {
		t.Helper()
		if _, err := r.cl.Retrieve(ctx, events.RetrieveRequest{Query: "where do I live?", User: "ua"}); err != nil {
			t.Fatal(err)
		}
		brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			if files() != 1 {
				return fmt.Errorf("no stored view of ua in the views directory %s", after)
			}
			return nil
		})
	}
	first := cfg
	first.Metrics = metrics.New()
	r := startRun(t, first)
	r.talk(t, "a", "ua", 0, 12)
	stored(r, "after a cold load")
	// The directory is on /metrics, which no stream's size counts.
	rec := httptest.NewRecorder()
	first.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if body := rec.Body.String(); !strings.Contains(body, "agentmem_stored_view_files 1\n") || strings.Contains(body, "agentmem_stored_view_bytes 0\n") {
		t.Fatalf("the stored view's file is not on /metrics:\n%s", body)
	}
	r.stop()

	r = startRun(t, cfg)
	if n := files(); n != 1 {
		t.Fatalf("after a clean restart %d stored views, want ua's", n)
	}
	// A forget erases the file itself, as it purges the bucket (the retriever removes it again
	// when the announcement reaches it).
	brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		_, err := r.cl.Forget(ctx, "ua") // no responders until the extractor has started
		return err
	})
	if n := files(); n != 0 {
		t.Fatalf("when the forget returned, %d stored views were left", n)
	}
	r.talk(t, "b", "ua", 0, 12)
	stored(r, "after the forget and a new session")
	r.stop()
	if taken, err := datadir.TakeClean(dir); err != nil || !taken {
		t.Fatalf("the clean stop left no mark to take away (%v)", err)
	}
	r = startRun(t, cfg)
	if n := files(); n != 0 {
		t.Fatalf("after an unclean stop %d stored views are still there", n)
	}
	r.stop()

	// A run with the views in the bucket removes the files an earlier run left: its forgets
	// would not reach them.
	r = startRun(t, cfg)
	stored(r, "after the unclean restart")
	r.stop()
	cfg.ViewsInBucket = true
	r = startRun(t, cfg)
	if n := files(); n != 0 {
		t.Fatalf("with the views in the bucket, %d files of an earlier run are left", n)
	}
	r.stop()

	other := t.TempDir()
	cfg = lazyConfig(t, other, "")
	cfg.ViewsInBucket = true
	r = startRun(t, cfg)
	r.talk(t, "a", "ua", 0, 12)
	if _, err := r.cl.Retrieve(ctx, events.RetrieveRequest{Query: "where do I live?", User: "ua"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, daemon.ViewDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("with ViewsInBucket the views directory exists (%v)", err)
	}
}
