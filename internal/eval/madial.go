package eval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// MADial-Bench set constants.
const (
	// MADialLimit is the number of entries asked for per dialogue.
	MADialLimit = 20
	// MADialQueryRunes bounds the query: the last characters of the dialogue before its test turn.
	MADialQueryRunes = 1000
)

// MADialKs are the cut-offs of MADial's recall (R@k); hit@k is reported at 5 and 10.
var MADialKs = []int{1, 3, 5, 10, 20}

// MADialMemory is one memory of a MADial-Bench memory file.
type MADialMemory struct {
	Time    string     `json:"time"`
	Scene   string     `json:"scene"`
	Emotion string     `json:"emotion"`
	Event   string     `json:"event"`
	UserID  flexString `json:"user-id"`
}

// MADialDialogue is one dialogue of a MADial-Bench dialogue file.
type MADialDialogue struct {
	Dialogue   []string    `json:"dialogue"`
	TestTurn   []int       `json:"test-turn"`
	RelevantID flexStrings `json:"relevant-id"`
	UserID     flexString  `json:"user-id"`
	ID         flexString  `json:"id"`
}

// MADialMem is a memory prepared for publishing.
type MADialMem struct {
	ID     string // normalised memory id
	TurnID string // madial:<lang>:<id>
	UserID string // the data's user-id
	User   string // u<user-id> as a token
	Date   time.Time
	Memory MADialMemory
}

// MADialPaths returns the memory and dialogue files of lang in dir.
func MADialPaths(dir, lang string) (memory, dialogue string) {
	return filepath.Join(dir, "MADial-Bench-"+lang+"-memory.json"), filepath.Join(dir, "MADial-Bench-"+lang+"-dialogue.json")
}

// readJSONLines decodes a file of consecutive JSON values.
func readJSONLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	var out []T
	for {
		var v T
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: value %d: %w", path, len(out)+1, err)
		}
		out = append(out, v)
	}
}

// normalizeMADialID writes numeric ids without leading zeros or spaces.
func normalizeMADialID(s string) string {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return strconv.Itoa(n)
	}
	return s
}

// ReadMADialMemories reads a memory file (JSON lines of {"<id>": memory}) into id → memory. It
// fails on an id that appears twice.
func ReadMADialMemories(path string) (map[string]MADialMemory, error) {
	lines, err := readJSONLines[map[string]MADialMemory](path)
	if err != nil {
		return nil, err
	}
	out := map[string]MADialMemory{}
	for _, l := range lines {
		for k, m := range l {
			id := normalizeMADialID(k)
			if _, dup := out[id]; dup {
				return nil, fmt.Errorf("%s: memory id %s appears twice", path, id)
			}
			out[id] = m
		}
	}
	return out, nil
}

// LoadMADialMemories reads the memories of lang in dir, sorted by id. A memory without a
// user-id (the en file has none) takes the user-id of the zh memory with the same id and date
// (the en set is a translation of the zh one); borrowed counts those. It fails when a memory has
// no event text, a bad date, or no user-id to be had.
func LoadMADialMemories(dir, lang string) (mems []MADialMem, borrowed int, err error) {
	memPath, _ := MADialPaths(dir, lang)
	raw, err := ReadMADialMemories(memPath)
	if err != nil {
		return nil, 0, err
	}
	var zh map[string]MADialMemory
	if zhPath, _ := MADialPaths(dir, "zh"); lang != "zh" {
		if _, statErr := os.Stat(zhPath); statErr == nil {
			if zh, err = ReadMADialMemories(zhPath); err != nil {
				return nil, 0, err
			}
		}
	}
	var orphans []string
	for id, m := range raw {
		m.Time, m.Event = strings.TrimSpace(m.Time), strings.TrimSpace(m.Event)
		if m.Event == "" {
			return nil, 0, fmt.Errorf("%s: memory %s has no event text", memPath, id)
		}
		if len(m.Time) < 10 {
			return nil, 0, fmt.Errorf("%s: memory %s: bad time %q", memPath, id, m.Time)
		}
		day, err := time.Parse("2006-01-02", m.Time[:10])
		if err != nil {
			return nil, 0, fmt.Errorf("%s: memory %s: bad time %q", memPath, id, m.Time)
		}
		uid := strings.TrimSpace(string(m.UserID))
		if z, ok := zh[id]; uid == "" && ok && strings.TrimSpace(z.Time) == m.Time && strings.TrimSpace(string(z.UserID)) != "" {
			uid = strings.TrimSpace(string(z.UserID))
			borrowed++
		}
		if uid == "" {
			orphans = append(orphans, id)
			continue
		}
		mems = append(mems, MADialMem{ID: id, TurnID: "madial:" + lang + ":" + id, UserID: uid,
			User: Token("u" + uid), Date: day.Add(12 * time.Hour), Memory: m})
	}
	if len(orphans) > 0 {
		sort.Strings(orphans)
		return nil, 0, fmt.Errorf("%s: %d memories have no user-id (e.g. %s) and none could be taken from the zh memory file", memPath, len(orphans), orphans[0])
	}
	sort.Slice(mems, func(i, j int) bool { return lessID(mems[i].ID, mems[j].ID) })
	return mems, borrowed, nil
}

// lessID orders numeric ids by value, other ids as strings after them.
func lessID(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	switch {
	case errA == nil && errB == nil:
		return x < y
	case errA == nil || errB == nil:
		return errA == nil
	}
	return a < b
}

// MADialSessions maps every memory onto one turn (role user, content the event text, metadata
// memory_id, scene and emotion) at noon UTC of its date, in a session of its own,
// "u<user-id>_m<id>", which then ends.
func MADialSessions(mems []MADialMem, tenant string) []Session {
	out := make([]Session, 0, len(mems))
	for _, m := range mems {
		id := Token(m.User + "_m" + m.ID)
		md := map[string]any{"memory_id": m.ID}
		if m.Memory.Scene != "" {
			md["scene"] = m.Memory.Scene
		}
		if m.Memory.Emotion != "" {
			md["emotion"] = m.Memory.Emotion
		}
		out = append(out, Session{Tenant: tenant, ID: id, User: m.User, Turns: []client.Turn{{
			ID: m.TurnID, Session: id, User: m.User, Role: events.RoleUser, Content: m.Memory.Event, Metadata: md, Time: m.Date,
		}}})
	}
	return out
}

var madialSpeakerRE = regexp.MustCompile(`^<[^<>]*>\s*:+\s*`)

// MADialQuery is the text of the dialogue lines before line before, one line per turn, without
// the <BOD>/<EOD> markers, the "<Name>:" speaker markers and the quotes around each line; the
// assistant's lines are marked "assistant: " (the retrieve query's convention for a dialogue,
// docs/protocol.md), the user's are not. When
// longer than maxRunes (> 0) it keeps the last whole lines that fit, or the last maxRunes
// characters of the last line.
func MADialQuery(dialogue []string, before, maxRunes int) string {
	var lines, roles []string
	for i, l := range dialogue {
		if i >= before {
			break
		}
		l = strings.TrimSpace(l)
		for _, tag := range []string{"<BOD>", "<EOD>"} {
			l = strings.TrimSpace(strings.TrimPrefix(l, tag))
		}
		role := ""
		if m := madialSpeakerRE.FindString(l); strings.HasPrefix(strings.ToLower(m), "<assistant>") {
			role = "assistant: "
		}
		l = madialSpeakerRE.ReplaceAllString(l, "")
		l = strings.TrimSpace(strings.Trim(l, "\"“”「」 \t\r\n"))
		if l != "" {
			lines, roles = append(lines, l), append(roles, role)
		}
	}
	// The budget counts the lines' text, not their role markers.
	start := 0
	if maxRunes > 0 {
		n := 0
		for start = len(lines); start > 0; start-- {
			r := utf8.RuneCountInString(lines[start-1]) + 1
			if n+r > maxRunes+1 && start < len(lines) {
				break
			}
			n += r
		}
		if last := len(lines) - 1; start == last {
			if rs := []rune(lines[last]); len(rs) > maxRunes {
				lines[last] = strings.TrimSpace(string(rs[len(rs)-maxRunes:]))
			}
		}
	}
	var b strings.Builder
	for i := start; i < len(lines); i++ {
		if i > start {
			b.WriteByte('\n')
		}
		b.WriteString(roles[i] + lines[i])
	}
	return b.String()
}

// madialBaselines are BM25 over the user's own memories (shared/data/baselines.md).
var madialBaselines = map[string]Baseline{
	"zh": {Label: "BM25 bigrams (baselines.md)", Values: map[string]float64{
		"R@1": 0.258, "R@3": 0.414, "R@5": 0.508, "R@10": 0.606, "R@20": 0.746}},
	"en": {Label: "BM25 words, own memories (baselines.md)", Values: map[string]float64{
		"R@5": 0.492, "R@10": 0.581}},
}

// MADialSet reads the memories and dialogues of lang in dir and prepares them: tenant
// "madial-<lang>", one session per memory, and per dialogue with a user, a test turn and a
// relevant memory a query of the dialogue before its first test turn, asked by its user at the
// day after the newest memory.
func MADialSet(dir, lang string) (set *Set, notes []string, err error) {
	name := "madial-" + lang
	if err := events.ValidateToken("tenant", name); err != nil {
		return nil, nil, fmt.Errorf("language %q: %w", lang, err)
	}
	mems, borrowed, err := LoadMADialMemories(dir, lang)
	if err != nil {
		return nil, nil, err
	}
	_, diaPath := MADialPaths(dir, lang)
	dialogues, err := readJSONLines[MADialDialogue](diaPath)
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]MADialMem{}
	var newest time.Time
	users := map[string]bool{}
	for _, m := range mems {
		byID[m.ID] = m
		users[m.User] = true
		if m.Date.After(newest) {
			newest = m.Date
		}
	}
	at := newest.Add(24 * time.Hour)
	prefix := "madial:" + lang + ":"
	isMemory := func(id string) bool {
		m, ok := byID[strings.TrimPrefix(id, prefix)]
		return ok && m.TurnID == id
	}
	set = &Set{Name: name, Title: "MADial-Bench " + lang + " (" + dir + ")", GroupLabel: "USER",
		Sessions: MADialSessions(mems, name)}
	set.Columns = append(set.Columns, Column{Header: "N", Metric: "R@1", Count: true})
	for _, k := range MADialKs {
		m := "R@" + strconv.Itoa(k)
		set.Columns = append(set.Columns, Column{Header: m, Metric: m})
	}
	set.Columns = append(set.Columns, Column{Header: "hit@5", Metric: "hit@5"}, Column{Header: "hit@10", Metric: "hit@10"})
	if b, ok := madialBaselines[lang]; ok {
		set.Baselines = append(set.Baselines, b)
	}
	skipped, dropped, foreign := 0, 0, 0
	for i, d := range dialogues {
		did := strings.TrimSpace(string(d.ID))
		if did == "" {
			did = strconv.Itoa(i)
		}
		uid := strings.TrimSpace(string(d.UserID))
		if uid == "" || len(d.TestTurn) == 0 {
			skipped++
			continue
		}
		user := Token("u" + uid)
		var gold []string
		for _, g := range d.RelevantID {
			m, ok := byID[normalizeMADialID(g)]
			switch {
			case !ok:
				dropped++
			case !slices.Contains(gold, m.TurnID):
				gold = append(gold, m.TurnID)
				if m.User != user {
					foreign++
				}
			}
		}
		text := MADialQuery(d.Dialogue, slices.Min(d.TestTurn), MADialQueryRunes)
		if len(gold) == 0 || text == "" {
			skipped++
			continue
		}
		limit, qat := MADialLimit, at
		set.Queries = append(set.Queries, Query{
			ID: did, Group: user, Tenant: name,
			Request: events.RetrieveRequest{Query: text, User: user, Limit: &limit,
				Sources: []string{events.SourceArchive, events.SourceLong}, At: &qat},
			IsTurn: isMemory, Score: madialScore(gold),
			Detail:  map[string]any{"gold": gold},
			Answers: memoryAnswers(gold),
		})
	}
	notes = append(notes, fmt.Sprintf("%d memories of %d user(s), %d dialogues to ask at %s",
		len(mems), len(users), len(set.Queries), at.Format(time.RFC3339)))
	if borrowed > 0 {
		notes = append(notes, fmt.Sprintf("%d memories have no user-id: taken from the zh memory with the same id and date", borrowed))
	}
	if skipped+dropped+foreign > 0 {
		notes = append(notes, fmt.Sprintf("%d dialogue(s) skipped without user, test turn, text or relevant memory; %d relevant id(s) name no memory, %d another user's memory",
			skipped, dropped, foreign))
	}
	if len(set.Queries) == 0 {
		return nil, nil, fmt.Errorf("%s: no dialogue to ask", diaPath)
	}
	return set, notes, nil
}

// madialScore computes R@k for every k of MADialKs and hit@5, hit@10.
// memoryAnswers are a dialogue's gold memories.
func memoryAnswers(gold []string) []Answer {
	var out []Answer
	for _, g := range gold {
		out = append(out, turnAnswer("memory", g))
	}
	return out
}

func madialScore(gold []string) func(ranked []string) map[string]float64 {
	return func(ranked []string) map[string]float64 {
		m := map[string]float64{}
		for _, k := range MADialKs {
			m["R@"+strconv.Itoa(k)] = RecallAt(ranked, gold, k)
		}
		m["hit@5"], m["hit@10"] = HitAt(ranked, gold, 5), HitAt(ranked, gold, 10)
		return m
	}
}
