// Package powercut holds agentmem's staged power-cut test: memoryd (the binary, as a user runs
// it) stores its data on a lazyfs mount (internal/lazyfs), which forgets what was not synced;
// three kinds of client publish turns and record every acknowledged id (a plain nats.go
// JetStream publisher with Nats-Msg-Id, HTTP batches to memoryd's --http API, and pkg/client);
// at a random moment memoryd is killed with SIGKILL and the power cut (lazyfs.Cut), and memoryd
// restarts on what survived. After every cut the turns stream must hold every acknowledged turn
// once; at the end, once memoryd has caught up, every acknowledged turn is in short-term memory
// once (itself or in the provenance of one summary), retrieve finds the last turns acknowledged
// before each cut, and the short-term entries, the summaries and the live facts equal what a
// replay of the turns stream builds in separate buckets.
//
// The same run with --durability interval loses acknowledged turns, and the test says how many:
// the harness can fail. `go test ./internal/powercut` makes a few cuts (it skips, saying why,
// where FUSE cannot be mounted); `make chaos` (build tag chaos) makes 20 with sync, cuts with
// interval (asserting that they lose turns), kill -9 alone, and cuts on a filesystem that makes
// a name durable only when its directory is fsynced. Every run logs the syncs per stream and
// file (lazyfs counts them).
//
// The filesystem model of the asserted runs is a journaling filesystem's (lazyfs.AnySync: a
// directory change is durable with the next fsync of anything). Session counters and the
// history of facts (superseded versions, ids, valid_from, provenance) that differ from the
// replay are logged, not failed, unless POWERCUT_EXACT_REPLAY=1 (after kill -9s they differ
// in many sessions and users today, with no fault in one now and then); POWERCUT_LOGS=DIR keeps
// each run's memoryd log in DIR.
package powercut
