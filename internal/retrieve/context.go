package retrieve

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// The context groups the entries it keeps, in this order, under headings in the language of
// the query.
var contextGroups = []struct {
	key    string
	en, zh string
}{
	{"facts", "Known facts about the user", "关于用户的已知事实"},
	{"changed", "Earlier statements, since changed (what holds now follows each)", "早前的说法，已变更（箭头后为现在的情况）"},
	{"summaries", "Summaries of earlier conversation", "早前对话的摘要"},
	{"past", "Relevant earlier turns", "相关的历史对话"},
	{"recent", "Recent turns of this conversation", "本次对话的近期内容"},
}

func groupOf(e events.RetrievedEntry, notes map[string]changeNote) string {
	switch {
	case notes[e.ID].turn:
		return "changed"
	case e.Type == string(memory.Fact):
		return "facts"
	case e.Type == string(memory.Summary):
		return "summaries"
	case e.Source == memory.SourceShort:
		return "recent"
	}
	return "past"
}

// queryLanguage is "zh" when the query is mostly Chinese characters.
func queryLanguage(q string) string {
	han, letters := 0, 0
	for _, r := range q {
		switch {
		case unicode.Is(unicode.Han, r):
			han++
			letters++
		case unicode.IsLetter(r):
			letters++
		}
	}
	if letters > 0 && han*3 >= letters {
		return "zh"
	}
	return "en"
}

// buildContext renders the top entries that fit in budget tokens (counted with counter) as text
// to put into a prompt: first the profile facts, best first, within ProfileShare of the budget,
// then the ranked entries, best first, in what is left (an entry that does not fit is skipped,
// smaller ones after it may still fit, entries are never cut); then grouped (facts, summaries,
// relevant earlier turns, recent turns of the session), each group in time order, each entry
// with its date. A turn that said what has since changed (notes, see markChanged) is shown after
// the facts under a heading of its own, with what holds now; a summary that covers one says what
// changed. It returns the text, its tokens and the profile facts it kept; "" and 0 when budget
// is 0 or nothing fits.
func buildContext(entries, profile []events.RetrievedEntry, notes map[string]changeNote, query string, budget int, counter memory.Counter) (string, int, []events.RetrievedEntry) {
	if budget <= 0 || len(entries)+len(profile) == 0 {
		return "", 0, nil
	}
	lang := queryLanguage(query)
	heading := func(key string) string {
		for _, g := range contextGroups {
			if g.key == key {
				if lang == "zh" {
					return "## " + g.zh + "\n"
				}
				return "## " + g.en + "\n"
			}
		}
		return ""
	}
	kept := map[string][]events.RetrievedEntry{}
	used := 0
	take := func(e events.RetrievedEntry, limit int) bool {
		g := groupOf(e, notes)
		cost := counter.Count(contextLine(e, notes, lang))
		if len(kept[g]) == 0 {
			cost += counter.Count(heading(g))
		}
		if used+cost > limit {
			return false
		}
		kept[g] = append(kept[g], e)
		used += cost
		return true
	}
	var profileKept []events.RetrievedEntry
	for _, e := range profile {
		if take(e, int(float64(budget)*ProfileShare)) {
			profileKept = append(profileKept, e)
		}
	}
	for _, e := range entries {
		take(e, budget)
	}
	var b strings.Builder
	for _, g := range contextGroups {
		es := kept[g.key]
		if len(es) == 0 {
			continue
		}
		slices.SortStableFunc(es, func(a, b events.RetrievedEntry) int { return a.Timestamp.Compare(b.Timestamp) })
		b.WriteString(heading(g.key))
		for _, e := range es {
			b.WriteString(contextLine(e, notes, lang))
		}
	}
	if b.Len() == 0 {
		return "", 0, nil
	}
	text := b.String()
	return text, counter.Count(text), profileKept
}

func contextLine(e events.RetrievedEntry, notes map[string]changeNote, lang string) string {
	content := strings.Join(strings.Fields(e.Content), " ")
	if n, ok := notes[e.ID]; ok {
		content += n.suffix(lang)
	}
	switch memory.Type(e.Type) {
	case memory.Fact, memory.Summary:
		return fmt.Sprintf("- (%s) %s\n", e.Timestamp.UTC().Format("2006-01-02"), content)
	}
	label := strings.ToLower(e.Type)
	if role, ok := e.Metadata["role"].(string); ok && role != "" {
		label = role
	}
	if tool, ok := e.Metadata["tool"].(string); ok && tool != "" {
		label += " " + tool
	}
	return fmt.Sprintf("- [%s, %s] %s\n", e.Timestamp.UTC().Format("2006-01-02 15:04"), label, content)
}
