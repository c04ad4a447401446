package powercut

import (
	"os"
	"testing"

	"github.com/agentmem/agentmem/internal/lazyfs"
)

// TestPowerCut makes a few staged power cuts of memoryd on a filesystem that commits directory
// changes with the next sync, as ext4 and XFS do (lazyfs.AnySync). With the default durability
// (sync) nothing acknowledged is lost or stored twice, and the memory rebuilt after the cuts
// holds every turn once and has the entries, summaries and facts a replay of the turns stream
// builds. With --durability interval the same run loses acknowledged turns: the harness can
// fail. make chaos makes 20 cuts (chaos_test.go).
func TestPowerCut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memoryd and cuts its power a few times: not in -short")
	}
	t.Run("sync", func(t *testing.T) {
		out := run(t, config{durability: "sync", entries: lazyfs.AnySync, cuts: 3, seed: 1, minAcked: 100})
		report(t, out)
		assertNothingLost(t, out)
	})
	t.Run("interval", func(t *testing.T) {
		out := run(t, config{durability: "interval", entries: lazyfs.AnySync, cuts: 2, seed: 2})
		report(t, out)
		assertLoses(t, out)
	})
}

func report(t *testing.T, out outcome) {
	t.Helper()
	if out.stalled != nil {
		t.Logf("%d acknowledged, %d lost (at %d cuts), %d stored twice; then memoryd did not catch up (above), so memory was not checked", out.acked, out.lost, out.cutsLosing, out.duplicated)
		t.Log(syncReport(out.syncs, out.acked))
		return
	}
	t.Logf("%d acknowledged, %d lost (at %d cuts), %d stored twice; after catching up: %d stored turns in no short-term entry, %d in two, %d short-term turns the stream lacks, %d of %d sampled turns not retrieved once; against a replay: %d sessions and users with other entries, summaries or facts, %d with other counters or fact history only (replay error: %v); %d facts, %d summaries in the long-term store; memoryd ready in %v after each start",
		out.acked, out.lost, out.cutsLosing, out.duplicated, out.shortMissing, out.shortDuplicate, out.shortPhantom, out.unretrieved, out.sampled, out.replayDiffers, out.replayDetail, out.replayErr, out.facts, out.summaries, out.startup)
	t.Log(syncReport(out.syncs, out.acked))
}

// assertNothingLost fails the test unless every check of the run passed. Session counters and
// the history of facts (their superseded versions, ids, valid_from and provenance) that differ
// from the replay are logged, not failed: a kill -9 alone makes them differ today, since
// derived state is not yet rewound to a synced checkpoint and replayed after an unclean stop
// (DESIGN.md, invariant 1), and now and then with no fault (a restated fact's provenance, in
// make chaos's baseline).
// POWERCUT_EXACT_REPLAY=1 fails on them too.
func assertNothingLost(t *testing.T, out outcome) {
	t.Helper()
	if os.Getenv("POWERCUT_EXACT_REPLAY") != "" && out.replayDetail > 0 {
		t.Errorf("replay: %d sessions and users differ from the live memory in counters or fact history (POWERCUT_EXACT_REPLAY)", out.replayDetail)
	}
	if out.lost > 0 || out.duplicated > 0 {
		t.Errorf("%d acknowledged turns lost, %d stored twice; want none", out.lost, out.duplicated)
	}
	if out.shortMissing > 0 || out.shortDuplicate > 0 || out.shortPhantom > 0 {
		t.Errorf("short-term memory: %d turns missing, %d twice, %d not in the stream; want none", out.shortMissing, out.shortDuplicate, out.shortPhantom)
	}
	if out.unretrieved > 0 {
		t.Errorf("%d of %d sampled turns not retrieved exactly once", out.unretrieved, out.sampled)
	}
	if out.replayErr != nil || out.replayDiffers > 0 {
		t.Errorf("replay: %d sessions and users have other short-term entries, summaries or live facts than the live memory (error: %v)", out.replayDiffers, out.replayErr)
	}
	if out.acked == 0 || out.sampled == 0 || out.facts == 0 || out.summaries == 0 {
		t.Errorf("%d turns acknowledged, %d sampled, %d facts, %d summaries: the run did not exercise everything", out.acked, out.sampled, out.facts, out.summaries)
	}
}

// assertLoses fails the test unless the run lost acknowledged turns: the harness must be able
// to tell a synced turn from an unsynced one.
func assertLoses(t *testing.T, out outcome) {
	t.Helper()
	if out.lost == 0 {
		t.Errorf("no acknowledged turn lost in %d acknowledged; a power cut with unsynced writes must lose some", out.acked)
	}
	t.Logf("lost %d of %d acknowledged turns (%.0f%%) at %d cuts", out.lost, out.acked, 100*float64(out.lost)/float64(max(out.acked, 1)), out.cutsLosing)
}
