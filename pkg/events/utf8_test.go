package events

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// Bytes that are not UTF-8 in a turn are rejected with the field and the offset of the first bad
// byte, in every form a turn arrives in: binary mode, structured mode, data decoded from an event
// whose body the decoder took as it was, and a Turn built in Go. None is stored with U+FFFD.
func TestNotUTF8IsRejected(t *testing.T) {
	bad := []byte("{\"role\":\"user\",\"content\":\"caf\xe9\",\"user\":\"u\"}")
	at := strings.Index(string(bad), "\xe9")
	binary := func(ct string) nats.Header {
		h := nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"a"}, "ce-source": {"x"}, "ce-type": {TypeTurn}}
		if ct != "" {
			h["content-type"] = []string{ct}
		}
		return h
	}
	structured := []byte("{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"x\",\"type\":\"" + TypeTurn + "\",\"data\":" + string(bad) + "}")
	for _, c := range []struct {
		name    string
		msg     *nats.Msg
		wantErr string
	}{
		{"binary", &nats.Msg{Header: binary(ContentTypeJSON), Data: bad}, "data: not valid UTF-8 at byte " + itoa(at)},
		{"binary with charset", &nats.Msg{Header: binary("application/json; charset=utf-8"), Data: bad}, "data: not valid UTF-8 at byte " + itoa(at)},
		{"structured", &nats.Msg{Header: nats.Header{"content-type": {ContentTypeStructured}}, Data: structured}, "data: not valid UTF-8 at byte " + itoa(at)},
		{"structured attribute", &nats.Msg{Header: nats.Header{"content-type": {ContentTypeStructured}},
			Data: []byte("{\"specversion\":\"1.0\",\"id\":\"a\xff\",\"source\":\"x\",\"type\":\"t\"}")}, "id: not valid UTF-8 at byte 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.msg)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode: %v, want an ErrInvalid with %q", err, c.wantErr)
			}
		})
	}
	// Without a content-type the body is taken as it is; decoding the turn rejects it.
	ev, err := Decode(&nats.Msg{Header: binary(""), Data: bad})
	if err != nil {
		t.Fatalf("Decode without content-type: %v", err)
	}
	if _, err := DecodeTurn(ev); err == nil || !strings.Contains(err.Error(), "data: not valid UTF-8 at byte "+itoa(at)) {
		t.Fatalf("DecodeTurn: %v, want data: not valid UTF-8", err)
	}
	for _, c := range []struct {
		turn Turn
		want string
	}{
		{Turn{Role: RoleUser, Content: "ok \xff"}, "content: not valid UTF-8 at byte 3"},
		{Turn{Role: RoleTool, Content: "ok", Tool: "t\xc3"}, "tool: not valid UTF-8 at byte 1"},
		{Turn{Role: RoleUser, Content: "ok", Metadata: map[string]any{"k": []any{"fine", "b\xffd"}}}, "metadata.k[1]: not valid UTF-8 at byte 1"},
	} {
		if err := c.turn.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("Validate(%q): %v, want %q", c.turn.Content, err, c.want)
		}
	}
	// U+FFFD sent as such is text like any other.
	if err := (Turn{Role: RoleUser, Content: "a \uFFFD b"}).Validate(); err != nil {
		t.Errorf("a real U+FFFD: %v", err)
	}
}

func TestInvalidUTF8(t *testing.T) {
	for s, want := range map[string]int{"": -1, "abc": -1, "é\uFFFD": -1, "\xff": 0, "ab\xe9": 2, "测\xe6\xb5": 3} {
		if got := InvalidUTF8([]byte(s)); got != want {
			t.Errorf("InvalidUTF8(%q) = %d, want %d", s, got, want)
		}
		if got := invalidUTF8String(s); got != want {
			t.Errorf("invalidUTF8String(%q) = %d, want %d", s, got, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
