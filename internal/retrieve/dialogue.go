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
	head := content[:min(len(content), maxPrefixName*utf8.UTFMax+len("："))] // a name is near the start
	// The first colon, ASCII or full-width (two searches: strings.IndexAny with a set outside
	// ASCII looks each rune of head up in the set: 3 % of memoryd's CPU while it loaded cold
	// users).
	i := strings.IndexByte(head, ':')
	if j := strings.Index(head, "："); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i <= 0 {
		return ""
	}
	name := strings.TrimSpace(content[:i])
	_, colon := utf8.DecodeRuneInString(content[i:])
	rest := strings.TrimSpace(content[i+colon:])
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
		fwd fw cc bcc from to nb ok okay yes no pros cons option options
		user assistant system tool human ai bot agent model me you
		monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow
		注意 问题 答案 回答 提示 总结 备注 用户 助手 系统 问 答 结果 原因 例如 比如 标题 更新 今天 昨天 明天`) {
		notNames[w] = true
	}
}

// lastTurn is the previous turn of a session, as a turn's document needs it: who said it and
// the end of its text; and the names of the user's and the assistant's roles as the session's
// turns have called them so far (see addressed).
type lastTurn struct {
	role, speaker, tail string
	named               [2]string // by roleSlot
}

// roleSlot is the slot of a role in lastTurn.named: 0 user, 1 assistant, -1 any other role.
func roleSlot(role string) int {
	switch role {
	case "user":
		return 0
	case "assistant":
		return 1
	}
	return -1
}

// size is the memory the turn's strings take beyond the struct.
func (p *lastTurn) size() int { return len(p.tail) + len(p.named[0]) + len(p.named[1]) }

// maxTail bounds the text of a turn kept as the next turn's context: more than the rank
// package reads of it (its last terms and sentences).
const maxTail = 512

// dialogueDoc completes d, the document of the turn after p (of role d.Role and metadata md),
// with its speaker and, when another speaker said the previous turn, that turn's text as its
// context and that speaker as its addressee; then p becomes the turn.
//
// A conversation of two named people sent as the user's and the assistant's turns, without
// names, names them as they address each other: "Hey Mel!" said by the user names the
// assistant's role Mel for the rest of the session, "Hi Caroline!" in reply names the user's.
// A turn of a named role has that name as its speaker unless its metadata or content names one.
func (p *lastTurn) dialogueDoc(d rank.Doc, md map[string]any) rank.Doc {
	d.Speaker = speakerOf(md, d.Text)
	slot := roleSlot(d.Role)
	if d.Speaker == "" && slot >= 0 {
		d.Speaker = p.named[slot]
	}
	if slot >= 0 && p.named[1-slot] == "" {
		if n := addressed(d.Text); n != "" && n != d.Speaker {
			p.named[1-slot] = n
		}
	}
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
		tail = tail[i:]
	}
	p.role, p.speaker, p.tail = d.Role, d.Speaker, tail
	return d
}

// kept returns p with its strings copied: a turn's, which it may be substrings of, for a
// lastTurn kept past the read that made it (archiveSession.last). dialogueDoc does not copy
// them: a load makes one lastTurn per turn and keeps one per session.
func (p lastTurn) kept() lastTurn {
	p.role, p.speaker, p.tail = strings.Clone(p.role), strings.Clone(p.speaker), strings.Clone(p.tail)
	p.named = [2]string{strings.Clone(p.named[0]), strings.Clone(p.named[1])}
	return p
}

// greetings open a turn that addresses someone by name right after ("Hey Mel!", "Thanks,
// Dave"), lower case.
var greetings = []string{"hey", "hi", "hello", "hiya", "thanks", "thank you", "congrats",
	"congratulations", "good morning", "good evening", "good night", "morning", "dear", "wow", "yo", "welcome back", "bye"}

// notAddressed are capitalised words that follow a greeting or close an exclamation without
// naming the person spoken to.
var notAddressed = map[string]bool{"I": true, "My": true, "The": true, "It": true, "That": true, "This": true,
	"You": true, "We": true, "Good": true, "God": true, "Man": true, "Guys": true, "Everyone": true, "All": true,
	"Sir": true, "Madam": true, "Mom": true, "Dad": true, "Mum": true, "Buddy": true, "Friend": true, "Again": true,
	"There": true, "So": true, "Much": true, "Lol": true, "Haha": true, "Ok": true, "Okay": true, "Yes": true, "No": true}

// addressed returns the name a turn addresses its listener by: the capitalised word after a
// greeting that opens it ("Hey Mel! …", "Thanks, Dave, …"), else one between a comma and an
// exclamation or question mark ("That's awesome, Dave!", "How was it, Mel?"); "" when none.
// Plain scanning: it runs on every turn indexed.
func addressed(text string) string {
	t := strings.TrimSpace(text)
	if n := addressedZH(t); n != "" {
		return n
	}
	for _, g := range greetings {
		if len(t) > len(g) && strings.EqualFold(t[:len(g)], g) {
			rest := strings.TrimLeft(t[len(g):], ", ") // not "Hey! How …": a new sentence
			if len(rest) < len(t)-len(g) {             // the greeting is a word of its own
				if w := capitalised(rest); w != "" {
					return w
				}
			}
			break
		}
	}
	for i := 0; i < len(t); i++ {
		if t[i] != '!' && t[i] != '?' {
			continue
		}
		j := i
		for j > 0 && t[j-1] == ' ' {
			j--
		}
		k := j
		for k > 0 && isASCIILetter(t[k-1]) {
			k--
		}
		if k == j || k < 2 || t[k-1] != ' ' || t[k-2] != ',' {
			continue
		}
		if w := capitalised(t[k:j]); w == t[k:j] {
			return w
		}
	}
	return ""
}

// greetingsZH open a Chinese turn that addresses someone by name right after ("嗨，小明！",
// "你好小红，…"), longest first where one starts another.
var greetingsZH = []string{"你好呀", "你好", "您好", "嗨", "嘿", "哈喽", "早上好", "晚上好", "早安", "晚安",
	"谢谢你", "谢谢", "恭喜你", "恭喜"}

// notNamesZH are what follows a greeting in place of a name: the listener as a group or by kin.
var notNamesZH = []string{"大家", "朋友", "亲爱", "老师", "妈妈", "爸爸", "宝贝", "各位", "同学"}

// addressedZH returns the name a Chinese greeting that opens t addresses: two or three Han
// characters after it (and a comma), closed by punctuation, none of them a character common in
// other words that open a sentence (notInHanNames); "" when none. A Chinese name has no capital
// to tell it from other words, so only a greeting introduces one.
func addressedZH(t string) string {
	for _, g := range greetingsZH {
		if !strings.HasPrefix(t, g) {
			continue
		}
		rest := strings.TrimLeft(t[len(g):], "，, ")
		var name []rune
		for _, r := range rest {
			if !unicode.Is(unicode.Han, r) {
				if !strings.ContainsRune("！!，,。.？?~～ ", r) {
					return ""
				}
				break
			}
			if name = append(name, r); len(name) > 3 {
				return ""
			}
		}
		n := string(name)
		if len(name) < 2 || strings.ContainsAny(n, notInHanNames) {
			return ""
		}
		for _, w := range notNamesZH {
			if strings.HasPrefix(n, w) {
				return ""
			}
		}
		return n
	}
	return ""
}

// capitalised returns the word of ASCII letters that opens s when it is a name: an upper-case
// letter then lower-case ones, two letters at least, not a word of notAddressed.
func capitalised(s string) string {
	n := 0
	for n < len(s) && isASCIILetter(s[n]) {
		n++
	}
	w := s[:n]
	if len(w) < 2 || w[0] < 'A' || w[0] > 'Z' || notAddressed[w] {
		return ""
	}
	for i := 1; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return ""
		}
	}
	return w
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
