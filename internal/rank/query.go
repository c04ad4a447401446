package rank

import (
	"strings"

	"github.com/agentmem/agentmem/internal/search"
)

// qterm is a distinct query term with its weight.
type qterm struct {
	term string
	w    float64
}

// QueryLine is one line of a query with its speaker's role ("" when unmarked).
type QueryLine struct {
	Role, Text string
}

// queryRoles are the roles a query line may be marked with ("assistant: ..."), lower case.
var queryRoles = []string{"user", "assistant", "system", "tool"}

// ParseQuery splits query into its lines (a dialogue: one turn a line, oldest first). A line
// that starts with a role and a colon ("user:", "assistant:", "system:", "tool:", in any
// case) is that role's; the marker is not part of its text. Empty lines are dropped.
func ParseQuery(query string) []QueryLine {
	var out []QueryLine
	for line := range strings.SplitSeq(query, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		role := ""
		for _, r := range queryRoles {
			if len(line) > len(r) && line[len(r)] == ':' && strings.EqualFold(line[:len(r)], r) {
				role, line = r, strings.TrimSpace(line[len(r)+1:])
				break
			}
		}
		if line != "" {
			out = append(out, QueryLine{Role: role, Text: line})
		}
	}
	return out
}

// lineWeight is the weight of the terms of line i of n: QueryRecency^(n−1−i) (the last line
// weighs 1), times QuerySpeaker for a line marked with a role other than the user's.
func (c *Config) lineWeight(l QueryLine, i, n int) float64 {
	w := 1.0
	if c.QueryRecency < 1 {
		for range n - 1 - i {
			w *= c.QueryRecency
			if w < 1e-6 {
				break
			}
		}
	}
	if l.Role != "" && l.Role != "user" {
		w *= c.QuerySpeaker
	}
	return w
}

// questionWords are the Chinese words that ask (什么, 哪里, 为什么, 多少, 吗 …): a query's
// answer does not hold them, and the character pairs across them ("叫什么名字": 叫什, 么名) are
// no words. They end a run of Han characters in a query, as a space would.
var questionWords = strings.NewReplacer(
	"为什么", " ", "什么", " ", "怎么样", " ", "怎么", " ", "怎样", " ", "哪里", " ", "哪儿", " ",
	"哪个", " ", "哪些", " ", "哪", " ", "多少", " ", "几个", " ", "几次", " ", "几天", " ",
	"吗", " ", "呢", " ", "谁", " ", "是否", " ")

// queryTerms returns the distinct terms of query, in first-seen order, with their weights
// (k3+1)·qtf/(k3+qtf), or 1 with QueryK3 off. qtf sums the weights of the lines (see
// lineWeight) the term occurs in, once per occurrence.
func (c *Config) queryTerms(query string) []qterm {
	lines := ParseQuery(query)
	idx := make(map[string]int)
	out := make([]qterm, 0, len(query)/8+1)
	for i, l := range lines {
		lw := c.lineWeight(l, i, len(lines))
		text := l.Text
		if !c.KeepQuestionWords {
			text = questionWords.Replace(text)
		}
		terms := search.Terms(text)
		if c.ChineseWords > 0 {
			terms = append(terms, wordTerms(text)...)
		}
		for _, t := range terms {
			if j, ok := idx[t]; ok {
				out[j].w += lw
				continue
			}
			idx[t] = len(out)
			out = append(out, qterm{term: t, w: lw})
		}
	}
	for i := range out {
		if c.QueryK3 == Off {
			out[i].w = min(out[i].w, 1)
		} else {
			f := out[i].w
			out[i].w = (c.QueryK3 + 1) * f / (c.QueryK3 + f)
		}
		if c.ChineseWords > 0 && strings.HasPrefix(out[i].term, wordPrefix) {
			out[i].w *= c.ChineseWords
		}
	}
	return out
}

// QueryText is query without its lines' role markers (see [ParseQuery]), one line a turn: what an
// embedder should read, the markers being no part of what was said.
func QueryText(query string) string {
	lines := ParseQuery(query)
	if len(lines) == 1 && lines[0].Role == "" {
		return lines[0].Text
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.Text)
	}
	return b.String()
}
