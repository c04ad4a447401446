package retrieve

import (
	"strings"

	"github.com/agentmem/agentmem/internal/rank"
)

// Dialogue context of a turn's document: who said it, and what it answers.

// speakerOf returns the name of a turn's speaker from its metadata: "name", else "speaker"
// (optional metadata of a turn in a conversation of named speakers, see docs/protocol.md).
func speakerOf(md map[string]any) string {
	for _, k := range [...]string{"name", "speaker"} {
		if s, ok := md[k].(string); ok {
			if s = strings.TrimSpace(s); s != "" {
				return s
			}
		}
	}
	return ""
}

// lastTurn is the previous turn of a session, as a turn's document needs it: who said it and
// the end of its text.
type lastTurn struct {
	role, speaker, tail string
}

// maxTail bounds the text of a turn kept as the next turn's context: more than the rank
// package reads of it (its last terms and sentences).
const maxTail = 512

// dialogueDoc completes d, the document of the turn after p (of role d.Role and metadata md),
// with its speaker and, when another speaker said the previous turn, that turn's text as its
// context and that speaker as its addressee; then p becomes the turn.
func (p *lastTurn) dialogueDoc(d rank.Doc, md map[string]any) rank.Doc {
	d.Speaker = speakerOf(md)
	who, prev := d.Speaker, p.speaker
	if who == "" || prev == "" {
		who, prev = d.Role, p.role
	}
	if p.tail != "" && who != prev {
		d.Context = p.tail
		if p.speaker != "" && p.speaker != d.Speaker {
			d.Addressee = p.speaker
		}
	}
	tail := d.Text
	if len(tail) > maxTail {
		i := len(tail) - maxTail
		for i < len(tail) && tail[i]&0xC0 == 0x80 { // not in the middle of a character
			i++
		}
		tail = strings.Clone(tail[i:])
	}
	*p = lastTurn{role: d.Role, speaker: d.Speaker, tail: tail}
	return d
}
