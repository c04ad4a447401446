package importer

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		wantErr string // substring; "" for a good line
		check   func(t *testing.T, tu Turn)
	}{
		{name: "minimal with defaults", line: `{"session":"s1","role":"user","content":"hi"}`,
			check: func(t *testing.T, tu Turn) {
				if tu.Tenant != "acme" || tu.User != "alice" || tu.Session != "s1" || !tu.Time.IsZero() || tu.ID != "" {
					t.Fatalf("got %+v", tu)
				}
			}},
		{name: "every field", line: `{"tenant":"t2","session":"s1","role":"tool","tool":"search","content":"结果","time":"2026-01-02T10:00:00+08:00","id":"x-1","user":"bob","metadata":{"n":12345678901234567890},"extra":true}`,
			check: func(t *testing.T, tu Turn) {
				if tu.Tenant != "t2" || tu.User != "bob" || tu.ID != "x-1" || tu.Body.Tool != "search" || tu.Body.Content != "结果" {
					t.Fatalf("got %+v", tu)
				}
				if want := time.Date(2026, 1, 2, 2, 0, 0, 0, time.UTC); !tu.Time.Equal(want) || tu.Time.Location() != time.UTC {
					t.Fatalf("time %v, want %v in UTC", tu.Time, want)
				}
				if n := tu.Body.Metadata["n"]; n == nil || n.(interface{ String() string }).String() != "12345678901234567890" {
					t.Fatalf("metadata number changed: %v", n)
				}
			}},
		{name: "not JSON", line: `{"session":`, wantErr: "invalid JSON"},
		{name: "two values", line: `{"session":"s","role":"user","content":"a"} {}`, wantErr: "more than one value"},
		{name: "array", line: `[1,2]`, wantErr: "invalid JSON"},
		{name: "content not a string", line: `{"session":"s","role":"user","content":5}`, wantErr: "content: got a JSON number, want a string"},
		{name: "missing session", line: `{"role":"user","content":"a"}`, wantErr: "session: missing"},
		{name: "bad session", line: `{"session":"a.b","role":"user","content":"a"}`, wantErr: `session "a.b"`},
		{name: "bad tenant", line: `{"tenant":"a b","session":"s","role":"user","content":"a"}`, wantErr: `tenant "a b"`},
		{name: "missing role", line: `{"session":"s","content":"a"}`, wantErr: "role: missing"},
		{name: "bad role", line: `{"session":"s","role":"robot","content":"a"}`, wantErr: `role "robot"`},
		{name: "missing content", line: `{"session":"s","role":"user"}`, wantErr: "content: must not be empty"},
		{name: "blank content", line: `{"session":"s","role":"user","content":"  \n"}`, wantErr: "content: must not be empty"},
		{name: "bad user", line: `{"session":"s","role":"user","content":"a","user":"a@b"}`, wantErr: `user "a@b"`},
		{name: "bad time", line: `{"session":"s","role":"user","content":"a","time":"yesterday"}`, wantErr: `time "yesterday": not RFC 3339`},
		{name: "id with space", line: `{"session":"s","role":"user","content":"a","id":"a b"}`, wantErr: "printable ASCII"},
		{name: "id not ASCII", line: `{"session":"s","role":"user","content":"a","id":"编号"}`, wantErr: "printable ASCII"},
		{name: "content too large", line: `{"session":"s","role":"user","content":"` + strings.Repeat("x", 101) + `"}`, wantErr: "at most 100"},
		{name: "invalid UTF-8", line: "{\"session\":\"s\",\"role\":\"user\",\"content\":\"\xff\"}", wantErr: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tu, err := parseLine([]byte(tt.line), "acme", "alice", 100)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				tt.check(t, tu)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDeriveIDIsDeterministicAndTellsRepeatsApart(t *testing.T) {
	parse := func(line string) Turn {
		tu, err := parseLine([]byte(line), "acme", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		return tu
	}
	a := parse(`{"session":"s1","user":"u","role":"user","content":"好的","time":"2026-01-02T10:00:00+08:00"}`)
	// The same instant written in another zone, another user and metadata: the same turn.
	b := parse(`{"session":"s1","user":"v","role":"user","content":"好的","time":"2026-01-02T02:00:00Z","metadata":{"k":1}}`)
	if DeriveID(a, 0) != DeriveID(b, 0) {
		t.Fatal("the same turn got two ids")
	}
	if DeriveID(a, 0) == DeriveID(a, 1) {
		t.Fatal("a repeated turn got the id of the first")
	}
	for _, other := range []string{
		`{"session":"s2","role":"user","content":"好的","time":"2026-01-02T10:00:00+08:00"}`,
		`{"tenant":"t2","session":"s1","role":"user","content":"好的","time":"2026-01-02T10:00:00+08:00"}`,
		`{"session":"s1","role":"assistant","content":"好的","time":"2026-01-02T10:00:00+08:00"}`,
		`{"session":"s1","role":"user","content":"好的 ","time":"2026-01-02T10:00:00+08:00"}`,
		`{"session":"s1","role":"user","content":"好的"}`,
	} {
		if DeriveID(parse(other), 0) == DeriveID(a, 0) {
			t.Fatalf("%s got the id of another turn", other)
		}
	}
	if id := DeriveID(a, 0); !strings.HasPrefix(id, "imp-") || len(id) != 36 || checkID(id) != nil {
		t.Fatalf("derived id %q", id)
	}
	if EndID("t", "s", "a") == EndID("t", "s", "b") || checkID(EndID("t", "s", "a")) != nil {
		t.Fatal("session end ids")
	}
}

func TestLineReader(t *testing.T) {
	input := "\xef\xbb\xbf{\"a\":1}\r\n\n" + strings.Repeat("y", 100) + "\nshort\n" + strings.Repeat("z", 70000) + "\nlast"
	lr := newLineReader(strings.NewReader(input), 80)
	var got []string
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errLineTooLong) {
			got = append(got, "<too long>")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	want := []string{`{"a":1}`, "", "<too long>", "short", "<too long>", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if lr.bytes != int64(len(input)) {
		t.Fatalf("read %d bytes of %d", lr.bytes, len(input))
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"session":"s1","user":"u","role":"user","content":"我喜欢 Go","time":"2026-01-02T10:00:00+08:00"}`))
	f.Add([]byte(`{"tenant":"t","session":"s","role":"tool","tool":"x","content":"a","metadata":{"a":[1,2,{"b":null}]},"id":"i"}`))
	f.Add([]byte(`{"session":5}`))
	f.Add([]byte("\xff"))
	f.Fuzz(func(t *testing.T, line []byte) {
		tu, err := parseLine(line, "acme", "", 1<<10)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if tu.Body.Validate() != nil || tu.Session == "" || tu.Tenant == "" {
			t.Fatalf("accepted an invalid turn: %+v", tu)
		}
		if tu.ID == "" {
			if id := DeriveID(tu, 0); checkID(id) != nil {
				t.Fatalf("derived a bad id %q", id)
			}
		}
	})
}
