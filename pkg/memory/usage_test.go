package memory

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

func TestUsageAdd(t *testing.T) {
	got := Usage{Calls: 1, InputTokens: 10, OutputTokens: 3}.Add(Usage{Calls: 2, InputTokens: 5, OutputTokens: 7})
	if want := (Usage{Calls: 3, InputTokens: 15, OutputTokens: 10}); got != want {
		t.Fatalf("Add = %+v, want %+v", got, want)
	}
}

func TestUsageLedgerReport(t *testing.T) {
	l := NewUsageLedger()
	if r := l.Report(); r.Tenants == nil || len(r.Tenants) != 0 || r.Total != (Usage{}) {
		t.Fatalf("empty report = %+v", r)
	}
	u := func(c, i, o int) Usage { return Usage{Calls: c, InputTokens: i, OutputTokens: o} }
	l.Record("zeta", "s2", u(1, 100, 10))
	l.Record("acme", "s9", u(1, 50, 5))
	l.Record("acme", "s10", u(2, 20, 2))
	l.Record("acme", "s9", u(1, 50, 5))
	l.Record("zeta", "s1", u(1, 1, 1))

	if got := l.Session("acme", "s9"); got != u(2, 100, 10) {
		t.Errorf("Session(acme, s9) = %+v", got)
	}
	if got := l.Tenant("acme"); got != u(4, 120, 12) {
		t.Errorf("Tenant(acme) = %+v", got)
	}
	if got := l.Session("acme", "nope"); got != (Usage{}) {
		t.Errorf("unknown session = %+v", got)
	}
	if got := l.Tenant("nope"); got != (Usage{}) {
		t.Errorf("unknown tenant = %+v", got)
	}

	b, err := json.Marshal(l.Report())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tenants":[` +
		`{"tenant":"acme","usage":{"calls":4,"input_tokens":120,"output_tokens":12},"sessions":[` +
		`{"session":"s10","usage":{"calls":2,"input_tokens":20,"output_tokens":2}},` +
		`{"session":"s9","usage":{"calls":2,"input_tokens":100,"output_tokens":10}}]},` +
		`{"tenant":"zeta","usage":{"calls":2,"input_tokens":101,"output_tokens":11},"sessions":[` +
		`{"session":"s1","usage":{"calls":1,"input_tokens":1,"output_tokens":1}},` +
		`{"session":"s2","usage":{"calls":1,"input_tokens":100,"output_tokens":10}}]}],` +
		`"total":{"calls":6,"input_tokens":221,"output_tokens":23}}`
	if string(b) != want {
		t.Fatalf("report\n got %s\nwant %s", b, want)
	}
}

func TestUsageLedgerConcurrent(t *testing.T) {
	l := NewUsageLedger()
	const workers, records = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range records {
				l.Record(fmt.Sprint("t", w%2), fmt.Sprint("s", i%5), Usage{Calls: 1, InputTokens: 3, OutputTokens: 2})
				if i%20 == 0 {
					l.Report()
					l.Tenant("t0")
				}
			}
		}()
	}
	wg.Wait()
	r := l.Report()
	if want := (Usage{Calls: workers * records, InputTokens: 3 * workers * records, OutputTokens: 2 * workers * records}); r.Total != want {
		t.Fatalf("Total = %+v, want %+v", r.Total, want)
	}
	if len(r.Tenants) != 2 || r.Tenants[0].Tenant != "t0" || len(r.Tenants[0].Sessions) != 5 {
		t.Fatalf("report = %+v", r)
	}
	if got := l.Session("t1", "s3"); got.Calls != workers/2*records/5 {
		t.Fatalf("Session(t1, s3).Calls = %d, want %d", got.Calls, workers/2*records/5)
	}
}
