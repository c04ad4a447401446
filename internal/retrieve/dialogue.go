package retrieve

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/rank"
)

// Dialogue context of a turn's document: who said it, and what it answers.

// speakerOf returns the name of a turn's speaker: from its metadata, "name", else "speaker"
// (optional metadata of a turn in a conversation of named speakers, see docs/protocol.md), else
// from a name that opens its content ("Dave: I love hiking"; see prefixName).
func speakerOf(md map[string]any, content string) string {
	for _, k := range [...]string{"name", "speaker"} {
		if s, ok := md[k].(string); ok {
			if s = strings.TrimSpace(s); s != "" {
				return s
			}
		}
	}
	return prefixName(content)
}

// maxPrefixName bounds, in characters, a speaker's name that opens a turn's content.
const maxPrefixName = 32

// prefixName returns the name that opens content as its speaker's, as a transcript writes it
// and as many clients send the turns of a conversation of named speakers when the protocol has
// a role but no name: "Dave: I love hiking", "Mary Ann: …", "小明：我喜欢爬山". A name is one
// to three words, each starting with an upper-case letter (a Latin name) or a run of two to
// four Han characters, followed by a colon (ASCII or full-width) and text; a label that is not
// a name ("Note: …", "Q: …", "注意：…") is not one. "" when content opens with no name.
func prefixName(content string) string {
	i := strings.IndexAny(content, ":：")
	if i <= 0 || i > maxPrefixName*utf8.UTFMax {
		return ""
	}
	name := strings.TrimSpace(content[:i])
	rest := strings.TrimSpace(content[i+len(string([]rune(content[i:])[0])):])
	if rest == "" || utf8.RuneCountInString(name) > maxPrefixName || notNames[strings.ToLower(name)] {
		return ""
	}
	if han := []rune(name); len(han) >= 2 && len(han) <= 4 && allHan(han) {
		if strings.ContainsAny(name, notInHanNames) {
			return ""
		}
		return name
	}
	words := strings.Fields(name)
	if len(words) == 0 || len(words) > 3 {
		return ""
	}
	for _, w := range words {
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsUpper(r) || len(w) < 2 {
			return ""
		}
		for _, c := range w {
			if !unicode.IsLetter(c) && c != '\'' && c != '’' && c != '-' && c != '.' {
				return ""
			}
		}
	}
	return name
}

// notInHanNames are characters common in the words that open a Chinese sentence ("我觉得：",
// "他说：") and rare in names.
const notInHanNames = "我你您他她它们的了是在这那就也都说觉得想要吗呢吧"

func allHan(rs []rune) bool {
	for _, r := range rs {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return true
}

// notNames are the labels that open a text with a colon more often than a speaker's name does
// (lower case): a turn opening with one has no speaker by its content.
var notNames = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`note notes update edit warning error important reminder summary todo fyi ps
		question answer q a re subject title step tip hint example output input result results reason
		remember reminder correction fact context goal task problem solution background status name date
		time location address email phone ingredients instructions steps notice hello hi hey thanks
		dear fix bug feature idea plan plus minus total price cost source quote translation
		user assistant system tool human ai bot agent model me you
		monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow
		注意 问题 答案 回答 提示 总结 备注 用户 助手 系统 问 答 结果 原因 例如 比如 标题 更新 今天 昨天 明天`) {
		notNames[w] = true
	}
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
	d.Speaker = speakerOf(md, d.Text)
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
