package importer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem/pkg/events"
)

// Line is one line of an import file: a JSON object describing one conversation turn. Only
// session, role and content are required; other fields of the object are ignored.
type Line struct {
	// Tenant owns the session; the importer's default tenant when empty.
	Tenant string `json:"tenant"`
	// Session is the conversation the turn belongs to (required).
	Session string `json:"session"`
	// Role is user, assistant, system or tool (required).
	Role string `json:"role"`
	// Content is the text of the turn (required, not blank).
	Content string `json:"content"`
	// Time is when the turn happened, RFC 3339 (optional: without it the turn gets the time
	// JetStream stores it).
	Time string `json:"time"`
	// ID is the turn's id (optional: a deterministic id is derived from the line).
	ID string `json:"id"`
	// User owns the session (optional on every turn but a new session's first; the importer's
	// default user when empty).
	User string `json:"user"`
	// Tool names the tool of a tool turn (optional).
	Tool string `json:"tool"`
	// Metadata is carried through to the memory entry (optional).
	Metadata map[string]any `json:"metadata"`
}

// Turn is a line that passed validation: its tenant and user defaulted, its time parsed and its
// id set.
type Turn struct {
	Tenant, Session, ID, User string
	// Derived reports whether ID was derived from the line rather than given.
	Derived bool
	Time    time.Time
	Body    events.Turn
}

// maxIDBytes bounds a given turn id: it travels in the Nats-Msg-Id header with the tenant and
// session.
const maxIDBytes = 256

// parseLine decodes and checks one line. defTenant and defUser stand in for a missing tenant or
// user. Every error says which field is wrong; the caller adds the line number.
func parseLine(raw []byte, defTenant, defUser string, maxContent int) (Turn, error) {
	if !utf8.Valid(raw) {
		return Turn{}, errors.New("not valid UTF-8")
	}
	var l Line
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // metadata numbers are carried through as written
	if err := dec.Decode(&l); err != nil {
		return Turn{}, fmt.Errorf("invalid JSON: %s", jsonError(err))
	}
	if dec.More() {
		return Turn{}, errors.New("invalid JSON: more than one value on the line")
	}
	t := Turn{Tenant: l.Tenant, Session: l.Session, ID: l.ID, User: l.User}
	if t.Tenant == "" {
		t.Tenant = defTenant
	}
	if t.User == "" {
		t.User = defUser
	}
	if err := events.ValidateToken("tenant", t.Tenant); err != nil {
		return Turn{}, err
	}
	if l.Session == "" {
		return Turn{}, errors.New("session: missing")
	}
	if err := events.ValidateToken("session", l.Session); err != nil {
		return Turn{}, err
	}
	if l.Role == "" {
		return Turn{}, errors.New("role: missing, want user, assistant, system or tool")
	}
	t.Body = events.Turn{Role: l.Role, Content: l.Content, User: t.User, Tool: l.Tool, Metadata: l.Metadata}
	if err := t.Body.Validate(); err != nil {
		return Turn{}, err
	}
	if maxContent > 0 && len(l.Content) > maxContent {
		return Turn{}, fmt.Errorf("content: %d bytes; ingest accepts at most %d", len(l.Content), maxContent)
	}
	if l.Time != "" {
		at, err := time.Parse(time.RFC3339Nano, l.Time)
		if err != nil {
			return Turn{}, fmt.Errorf("time %q: not RFC 3339", l.Time)
		}
		t.Time = at.UTC()
	}
	if t.ID != "" {
		if err := checkID(t.ID); err != nil {
			return Turn{}, err
		}
	}
	return t, nil
}

// checkID accepts ids of 1-256 printable ASCII characters without spaces: they end up in the
// Nats-Msg-Id header and in the KV records of ingest.
func checkID(id string) error {
	if len(id) > maxIDBytes {
		return fmt.Errorf("id: %d bytes, at most %d", len(id), maxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("id %q: must be printable ASCII without spaces", id)
		}
	}
	return nil
}

// jsonError shortens the decoder's messages ("json: cannot unmarshal number into Go struct field
// Line.content of type string" becomes "content: got a number, want a string").
func jsonError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: got a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
	}
	if errors.Is(err, io.EOF) {
		return "empty"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "map":
		return "an object"
	default:
		return k
	}
}

// idKey is the part of a turn that identifies it when the file gives no id: where it was said,
// by whom, when and what. User and metadata are left out, so that re-importing the same history
// with another default user or enriched metadata still finds the same turns.
func idKey(t Turn) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range []string{t.Tenant, t.Session, t.Body.Role, t.Body.Tool, timeKey(t.Time), t.Body.Content} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

func timeKey(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// DeriveID is the id of a turn the file gives no id for: a hash of its tenant, session, role,
// tool, time and content, and of how many identical turns came before it in the same session of
// the file (occurrence, from 0), so that a user saying "ok" twice gives two turns while the same
// file imported twice gives the same ids.
func DeriveID(t Turn, occurrence int) string {
	k := idKey(t)
	h := sha256.New()
	h.Write(k[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(occurrence))
	h.Write(n[:])
	return "imp-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// EndID is the id of the session end the importer publishes after a session's last turn.
func EndID(tenant, session, lastTurnID string) string {
	h := sha256.New()
	for _, s := range []string{tenant, session, lastTurnID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "imp-end-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// errLineTooLong marks a line longer than the reader accepts; the rest of it is skipped.
var errLineTooLong = errors.New("line too long")

// lineReader reads lines of any length up to max bytes, without the line ending (LF or CRLF)
// and without a UTF-8 byte order mark at the start of the input.
type lineReader struct {
	br    *bufio.Reader
	max   int
	first bool
	buf   []byte
	// bytes counts what was read.
	bytes int64
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max, first: true}
}

// next returns the next line. At the end of the input it returns io.EOF; a line longer than max
// gives errLineTooLong (and the reader moves past it).
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.bytes += int64(len(chunk))
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+2 { // +2: the line ending
				tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (!errors.Is(err, io.EOF) || (len(lr.buf) == 0 && !tooLong && len(chunk) == 0)) {
			return nil, err
		}
		break
	}
	first := lr.first
	lr.first = false
	if tooLong {
		return nil, errLineTooLong
	}
	line := bytes.TrimSuffix(lr.buf, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if first {
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	}
	return line, nil
}
