package events

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

// fastBinary decodes the usual binary-mode event, as agentmem's own publishers write it, without
// the general path's sorting, maps and repeated checks: every ce- header in lower case with one
// value, content-type exactly application/json, only the id, source, type, specversion, time and
// subject attributes (the HTTP gateway's turns name their session in subject) and extensions. It
// reports false for anything else, and for anything the general path would reject, which then
// decides (and words the error): it never accepts what decodeBinary rejects, and what it accepts
// it decodes exactly as decodeBinary does (FuzzFastBinaryAgrees). In a profile of ingest under
// load, Decode was 60 % of deciding a turn.
func fastBinary(h nats.Header, body []byte) (event.Event, bool) {
	var id, source, typ, when, subject string
	var hasSV, hasCT, hasTime, hasSubject bool
	var exts []string // name, value pairs
	for k, vs := range h {
		if len(k) < 3 || !strings.EqualFold(k[:3], ceHeaderPrefix) {
			if k == ceContentTypeKey {
				if len(vs) != 1 || vs[0] != ContentTypeJSON {
					return event.Event{}, false
				}
				hasCT = true
			} else if !isASCII(k) || strings.EqualFold(k, ceContentTypeKey) {
				return event.Event{}, false
			}
			continue
		}
		name := k[3:]
		if k[:3] != ceHeaderPrefix || len(vs) != 1 || name == "" || !isLowerAlnum(name) {
			return event.Event{}, false
		}
		v, err := percentDecode(vs[0])
		if err != nil || checkText(v) != nil {
			return event.Event{}, false
		}
		v = strings.Clone(v)
		switch name {
		case "specversion":
			if v != ceSpecVersion {
				return event.Event{}, false
			}
			hasSV = true
		case "id":
			id = v
		case "source":
			source = v
		case "type":
			typ = v
		case "time":
			when, hasTime = v, true
		case "subject":
			if strings.TrimSpace(v) == "" {
				return event.Event{}, false
			}
			subject, hasSubject = v, true
		default:
			if !isExtensionName(name) {
				return event.Event{}, false
			}
			exts = append(exts, name, v)
		}
	}
	if !hasSV || !hasCT || strings.TrimSpace(id) == "" || strings.TrimSpace(source) == "" || strings.TrimSpace(typ) == "" {
		return event.Event{}, false
	}
	ev := event.New(ceSpecVersion)
	ec := ev.Context
	if ec.SetID(id) != nil || ec.SetType(typ) != nil || ec.SetSource(source) != nil {
		return event.Event{}, false
	}
	if hasTime {
		t, err := time.Parse(time.RFC3339Nano, when)
		if err != nil {
			return event.Event{}, false
		}
		ev.SetTime(t)
	}
	if hasSubject {
		ev.SetSubject(subject)
	}
	for i := 0; i < len(exts); i += 2 {
		if ec.SetExtension(exts[i], exts[i+1]) != nil {
			return event.Event{}, false
		}
	}
	ev.SetDataContentType(ContentTypeJSON)
	if len(body) > 0 {
		if !utf8.Valid(body) || !isJSON(body) {
			return event.Event{}, false
		}
		ev.DataEncoded = bytes.Clone(body)
	}
	// What checkEvent adds: the SDK's validation, and the source as it prints (the other values
	// were checked above).
	if ev.Validate() != nil || checkText(ev.Source()) != nil {
		return event.Event{}, false
	}
	return ev, true
}

// isLowerAlnum reports whether s is lower-case ASCII letters and digits only.
func isLowerAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// isASCII reports whether s is ASCII only.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
