package summarize

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/search"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Extractive returns the sentences of text that best stand for it, in their original order,
// within maxTokens tokens by counter (memory.EstimateCounter{} when nil). It is the summariser
// used when no LLM is configured, and the cutter of an LLM answer that overran its cap.
//
// Text that fits is returned whole (spaces around it trimmed). Otherwise text is split into
// lines, and lines into sentences: English ones end at . ! ? followed by a space (not after a
// single capital or a common abbreviation such as "Mr." or "e.g."), Chinese ones at 。！？；. A
// line may start with a role label ("user: ", "assistant: ", "tool (name): ", …), which is kept
// with the first sentence picked from its line but never scored. Each sentence is scored by the
// sum, over its distinct terms (search.Terms: stemmed English words without stop words, Chinese
// unigrams and bigrams), of how often the term occurs in the whole text, divided by the square
// root of the sentence's number of terms; the score is raised by 30 % when the sentence holds a
// number, 30 % when it holds a name (a capitalised word that does not start the sentence) and
// 50 % when it holds a cue of a preference, decision or plan ("prefer", "decided", "will",
// "must", "喜欢", "决定", "需要", "计划", …). Sentences without terms are never picked. The best
// sentences are taken greedily, skipping those that no longer fit, and printed in their original
// order, the sentences of one line on one line.
//
// The result never exceeds maxTokens (it is "" when maxTokens < 1 or text is empty). It holds
// only whole sentences, except when no sentence fits at all: then it is the best sentence cut at
// a rune boundary and ended with "…". It never fails.
func Extractive(text string, maxTokens int, counter memory.Counter) string {
	if counter == nil {
		counter = memory.EstimateCounter{}
	}
	text = strings.TrimSpace(text)
	if text == "" || maxTokens < 1 {
		return ""
	}
	if counter.Count(text) <= maxTokens {
		return text
	}
	return render(selectUnits(textUnits(text), maxTokens, counter))
}

// unit is a line of sentences: an optional label that is kept but never scored, then the
// sentences, rendered on one line.
type unit struct {
	label string
	sents []string
	// weight scales the scores of the sentences (0 counts as 1): the user's own words carry the
	// facts about the user, tool output rarely does.
	weight float64
}

// labelRE matches the role labels that start the lines of a formatted conversation.
var labelRE = regexp.MustCompile(`^(?:user|assistant|system|developer|message|fact|earlier summary|tool(?: \([^()\n]{1,64}\))?): `)

// textUnits splits text into units, one per non-empty line, each with its label if it has one.
func textUnits(text string) []unit {
	var units []unit
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		label := labelRE.FindString(line)
		if sents := splitSentences(line[len(label):], nil); len(sents) > 0 {
			units = append(units, unit{label: label, sents: sents})
		}
	}
	return units
}

// render prints units, one line each, and never fails.
func render(units []unit) string {
	var b strings.Builder
	for i, u := range units {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(u.label)
		for j, s := range u.sents {
			if j > 0 && needsSpace(u.sents[j-1], s) {
				b.WriteByte(' ')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// needsSpace reports whether a space goes between sentences a and b: not when either side is
// CJK, which is written without spaces.
func needsSpace(a, b string) bool {
	ra, _ := utf8.DecodeLastRuneInString(a)
	rb, _ := utf8.DecodeRuneInString(b)
	return !isWide(ra) && !isWide(rb)
}

// isWide reports whether r is a CJK character or CJK or full-width punctuation.
func isWide(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

// Score bonuses of a sentence, as fractions of its term score.
const (
	numberBonus = 0.3
	nameBonus   = 0.3
	cueBonus    = 0.5
)

// A sentence whose counted cost overruns the cap by at most roundingSlack tokens is tried
// against the rendering's real count, at most maxExactChecks times per selection.
const (
	roundingSlack  = 3
	maxExactChecks = 32
)

// candidate is a sentence competing for a place in the summary.
type candidate struct {
	unit, sent int
	score      float64
	cost       int // tokens of the sentence with the separator after it
}

// selectUnits returns the units cut down to their best sentences (see Extractive) so that their
// rendering fits limit tokens; nil when nothing fits or limit < 1.
func selectUnits(units []unit, limit int, counter memory.Counter) []unit {
	if limit < 1 || len(units) == 0 {
		return nil
	}
	if counter.Count(render(units)) <= limit {
		return units
	}
	cands := scoreSentences(units, counter)
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Compare(b.score, a.score) // best first; ties keep text order
	})
	labelCost := make([]int, len(units))
	for i, u := range units {
		labelCost[i] = counter.Count(u.label)
	}

	picked := make([][]bool, len(units))
	for i, u := range units {
		picked[i] = make([]bool, len(u.sents))
	}
	started := make([]bool, len(units))
	var order []candidate // in the order picked: best first
	have := make(map[string]struct{})
	used, checks := 0, 0
	for _, c := range cands {
		if c.score <= 0 {
			break
		}
		text := units[c.unit].sents[c.sent]
		if _, dup := have[text]; dup {
			continue // a repeated line (a log, a refrain) says nothing new
		}
		cost := c.cost
		if !started[c.unit] {
			cost += labelCost[c.unit]
		}
		picked[c.unit][c.sent] = true
		switch {
		case used+cost <= limit:
			used += cost
		case used+cost <= limit+roundingSlack && checks < maxExactChecks:
			// The sum of the parts' counts rounds up at every part; the rendering may still fit.
			checks++
			n := counter.Count(render(collect(units, picked)))
			if n > limit {
				picked[c.unit][c.sent] = false
				continue
			}
			used = n
		default:
			picked[c.unit][c.sent] = false
			continue
		}
		have[text] = struct{}{}
		started[c.unit] = true
		order = append(order, c)
	}
	// The costs add up to at least the rendering's count for counters that are subadditive over
	// concatenation, as the estimate is; for any other counter drop the weakest picks until the
	// rendering fits.
	for len(order) > 0 {
		out := collect(units, picked)
		if counter.Count(render(out)) <= limit {
			return out
		}
		last := order[len(order)-1]
		picked[last.unit][last.sent] = false
		order = order[:len(order)-1]
	}
	if len(cands) == 0 || cands[0].score <= 0 {
		return nil
	}
	best := cands[0]
	u := units[best.unit]
	if cut, ok := cutToFit(u.label, u.sents[best.sent], limit, counter); ok {
		return []unit{cut}
	}
	return nil
}

// collect returns the units with only their picked sentences, dropping units with none.
func collect(units []unit, picked [][]bool) []unit {
	var out []unit
	for i, u := range units {
		var sents []string
		for j, s := range u.sents {
			if picked[i][j] {
				sents = append(sents, s)
			}
		}
		if len(sents) > 0 {
			out = append(out, unit{label: u.label, sents: sents, weight: u.weight})
		}
	}
	return out
}

// cutToFit returns the longest rune prefix of sentence, ended with "…", that fits limit behind
// label (or without the label when it does not fit with it).
func cutToFit(label, sentence string, limit int, counter memory.Counter) (unit, bool) {
	for _, l := range []string{label, ""} {
		fits := func(k int) bool {
			return counter.Count(l+strings.TrimRightFunc(sentence[:byteOffset(sentence, k)], unicode.IsSpace)+"…") <= limit
		}
		n := utf8.RuneCountInString(sentence)
		if !fits(1) {
			if l == "" {
				return unit{}, false
			}
			continue
		}
		lo, hi := 1, n // fits(lo) holds; find the largest k that fits
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if fits(mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		prefix := strings.TrimRightFunc(sentence[:byteOffset(sentence, lo)], unicode.IsSpace)
		return unit{label: l, sents: []string{prefix + "…"}}, true
	}
	return unit{}, false
}

// scoreSentences returns every sentence of units as a candidate, in text order.
func scoreSentences(units []unit, counter memory.Counter) []candidate {
	var cands []candidate
	var terms [][]string
	freq := make(map[string]int)
	for i, u := range units {
		for j, s := range u.sents {
			ts := search.Terms(s)
			for _, t := range ts {
				freq[t]++
			}
			terms = append(terms, ts)
			cands = append(cands, candidate{unit: i, sent: j, cost: counter.Count(s + " ")})
		}
	}
	seen := make(map[string]struct{})
	for k := range cands {
		ts := terms[k]
		if len(ts) == 0 {
			continue
		}
		clear(seen)
		var sum float64
		for _, t := range ts {
			if _, dup := seen[t]; !dup {
				seen[t] = struct{}{}
				sum += float64(freq[t])
			}
		}
		u := units[cands[k].unit]
		w := u.weight
		if w == 0 {
			w = 1
		}
		cands[k].score = w * sum / math.Sqrt(float64(len(ts))) * bonus(u.sents[cands[k].sent])
	}
	return cands
}

// bonus returns the factor a sentence's score is multiplied by for holding a number, a name or
// a cue of a preference, decision or plan.
func bonus(s string) float64 {
	b := 1.0
	if strings.ContainsFunc(s, unicode.IsDigit) {
		b += numberBonus
	}
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	name, cue := false, false
	for i, w := range words {
		if i > 0 && !name && isName(w) {
			name = true
		}
		if !cue {
			_, cue = cueWords[strings.ToLower(w)]
		}
	}
	if !cue {
		for _, c := range cueSubstrings {
			if strings.Contains(s, c) {
				cue = true
				break
			}
		}
	}
	if name {
		b += nameBonus
	}
	if cue {
		b += cueBonus
	}
	return b
}

// isName reports whether w looks like a name: a capital followed by at least one lower-case
// letter ("Alice", "Berlin", "McDonald"; not "I", "OK" or "iPhone").
func isName(w string) bool {
	r, size := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r) && strings.ContainsFunc(w[size:], unicode.IsLower)
}

// cueWords are English words that mark a preference, a decision, a plan or a fact about the user.
var cueWords = map[string]struct{}{}

// cueSubstrings are the same cues in Chinese, found as substrings.
var cueSubstrings = []string{
	"喜欢", "爱吃", "爱好", "讨厌", "偏好", "最爱", "不要", "决定", "选择", "选了", "需要", "必须",
	"计划", "打算", "想要", "希望", "要求", "记住", "总是", "从不", "习惯", "过敏", "截止", "待办",
	"目标", "答应", "约定", "我叫", "名字", "生日", "住在",
}

func init() {
	for _, w := range strings.Fields(`
		prefer prefers preferred preference like likes liked love loves loved hate hates
		dislike dislikes favorite favourite decide decided decision chose choose chosen
		will must need needs plan plans planned planning want wants wanted always never
		usually allergic remember deadline todo goal goals promise promised agreed agree
		name birthday`) {
		cueWords[w] = struct{}{}
	}
}

// abbreviations end with a full stop that does not end a sentence.
var abbreviations = map[string]struct{}{}

func init() {
	for _, w := range strings.Fields(`mr mrs ms dr prof st sr jr vs etc e.g i.e cf approx fig inc ltd`) {
		abbreviations[w] = struct{}{}
	}
}

// splitSentences appends the sentences of text to out, trimmed, empty ones and cut markers left
// out. Sentences end at line breaks, at 。！？； (with any closing quotes or brackets after them)
// and at . ! ? (idem) followed by a space, a CJK character or the end of the text.
func splitSentences(text string, out []string) []string {
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !isCutMarker(s) {
			out = append(out, s)
		}
	}
	start := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\n' || r == '\r':
			add(text[start:i])
			i += size
			start = i
		case r == '。' || r == '！' || r == '？' || r == '；':
			j := skipClosers(text, i+size, isCJKStop)
			add(text[start:j])
			i, start = j, j
		case r == '.' || r == '!' || r == '?':
			j := skipClosers(text, i+size, isLatinStop)
			if atSentenceEnd(text, j) && !(r == '.' && j == i+1 && isAbbreviation(text[start:i])) {
				add(text[start:j])
				start = j
			}
			i = j
		default:
			i += size
		}
	}
	add(text[start:])
	return out
}

func isCJKStop(r rune) bool   { return r == '。' || r == '！' || r == '？' || r == '；' }
func isLatinStop(r rune) bool { return r == '.' || r == '!' || r == '?' }

// skipClosers returns the offset after any further stops and closing quotes or brackets at i.
func skipClosers(text string, i int, stop func(rune) bool) int {
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !stop(r) && !strings.ContainsRune(`"')]}”’」』）】》`, r) {
			break
		}
		i += size
	}
	return i
}

// atSentenceEnd reports whether a sentence can end at offset i: the end of text, a space or a
// CJK character follows.
func atSentenceEnd(text string, i int) bool {
	if i >= len(text) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsSpace(r) || isWide(r)
}

// isAbbreviation reports whether the sentence so far ends with a word whose full stop does not
// end the sentence: a single capital (an initial) or a common abbreviation.
func isAbbreviation(before string) bool {
	word := before[strings.LastIndexFunc(before, unicode.IsSpace)+1:]
	if r, size := utf8.DecodeRuneInString(word); size == len(word) && unicode.IsUpper(r) {
		return true
	}
	_, ok := abbreviations[strings.ToLower(word)]
	return ok
}
