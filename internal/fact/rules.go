package fact

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rules is the offline extractor: English and Chinese patterns over the user's own turns
// (role "user"; every other role is ignored). It never fails and is deterministic.
//
// A turn is split into sentences and clauses; the object of a pattern runs to the end of its
// clause, which ends at , . ! ? ; ， 。 ！ ？ ； and before connectives such as " but ",
// " because ", " if ", " and I ", 因为, 但是, 所以. Questions ("Do I like tea?", "我喜欢什么？"),
// conditional and hedged clauses ("if I moved to Berlin", "I'm not sure I like it",
// "如果我搬到上海"), objects that only point elsewhere ("I love that", "I like your idea",
// "我喜欢你") and objects shorter than two characters (one Han character is enough) yield
// nothing. Each clause yields at most one candidate; a turn may yield several. Candidates with
// the same normalised content are merged: provenance is the union in conversation order and
// the time is the earliest turn's.
//
// Contents are third-person statements in the turn's language ("The user prefers tea over
// coffee", "用户喜欢喝茶"). The patterns are listed in rules_en.go and rules_zh.go; the
// broader everyday ones ("I have two cats", "I just finished reading Dune", 我每周去健身房)
// in rules_life.go, with category "other" and a lower confidence. A clause holding contact
// details or a secret yields nothing (see the package documentation).
func Rules(turns []Turn) []Candidate {
	m := newMerger(turns)
	for _, t := range turns {
		if !strings.EqualFold(strings.TrimSpace(t.Role), "user") {
			continue
		}
		for _, f := range extract(t.Content) {
			m.add(Candidate{
				Content:    f.content,
				Category:   f.category,
				Key:        f.key,
				Confidence: f.confidence,
				Provenance: []string{t.ID},
			})
		}
	}
	return m.result()
}

// found is what one rule made of one clause.
type found struct {
	content    string
	category   string
	key        string
	confidence float64
}

// rule is one pattern. Its regexp is matched against a clause; build gets the submatches
// (index 0 the whole match) and says whether they make a fact.
type rule struct {
	name  string
	re    *regexp.Regexp
	build func(g []string) (found, bool)
	// latin rules must start at a word boundary of the clause.
	latin bool
	// hints are the words (latin rules) or strings one of which the clause must contain for
	// the rule to be tried: a cheap filter, nil when unknown.
	hints []string
}

// newRule compiles a rule and derives its hints from the pattern's leading literal or
// alternation: `i\s+…` needs the word "i", `(?:就|还是)用…` needs 就 or 还是.
func newRule(name, pattern string, latin bool, build func(g []string) (found, bool)) rule {
	r := rule{name: name, build: build, latin: latin}
	if latin {
		r.re = regexp.MustCompile(`(?i)` + pattern)
	} else {
		r.re = regexp.MustCompile(pattern)
	}
	p := strings.TrimPrefix(pattern, `\b`)
	if strings.HasPrefix(p, "(") {
		end := strings.IndexByte(p, ')')
		if end < 0 {
			return r
		}
		for _, alt := range strings.Split(strings.TrimPrefix(p[1:end], "?:"), "|") {
			if alt == "" || strings.ContainsAny(alt, `\()[]{}.*+?^$`) {
				return r
			}
			r.hints = append(r.hints, alt)
		}
		return r
	}
	end := strings.IndexFunc(p, func(c rune) bool { return strings.ContainsRune(`\()[]{}.*+?^$|'`, c) })
	if end < 0 {
		end = len(p)
	}
	if end > 0 {
		r.hints = []string{p[:end]}
	}
	return r
}

// applies reports whether a clause holds one of the rule's hints; words is the clause's
// lower-case words (letters and digits, split at apostrophes too).
func (r *rule) applies(c string, words map[string]bool) bool {
	if r.hints == nil {
		return true
	}
	for _, h := range r.hints {
		if r.latin && words[h] || !r.latin && strings.Contains(c, h) {
			return true
		}
	}
	return false
}

// clauseWords returns the set of lower-case words of a clause.
func clauseWords(c string) map[string]bool {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(c), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words[w] = true
	}
	return words
}

// extract runs every rule over every clause of one turn's text.
func extract(text string) []found {
	text = strings.NewReplacer("\u2019", "'", "\u2018", "'", "\u02BC", "'", "\u00A0", " ").Replace(text)
	var out []found
	for _, s := range sentences(text) {
		cs := clauses(s.text)
		for k, c := range cs {
			if s.question && !statementInQuestion(c, k == len(cs)-1) {
				continue
			}
			if f, ok := matchClause(c); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// matchClause returns the fact of the earliest rule match in c that makes one; among matches
// starting at the same place, the rule listed first wins.
func matchClause(c string) (found, bool) {
	c = strings.TrimSpace(c)
	if utf8.RuneCountInString(c) < 2 || len(c) > maxClause || conditionalStart(c) || sensitive(c) {
		return found{}, false
	}
	type hit struct {
		start, rule int
		groups      []string
	}
	var hits []hit
	words := clauseWords(c)
	for i, r := range allRules {
		if !r.applies(c, words) {
			continue
		}
		for off, n := 0, 0; off < len(c) && n < maxHitsPerRule; n++ {
			loc := r.re.FindStringSubmatchIndex(c[off:])
			if loc == nil {
				break
			}
			start := off + loc[0]
			next := start + max(1, runeLen(c[start:]))
			if r.latin && start > 0 && isWordRune(lastRune(c[:start])) {
				off = next
				continue
			}
			g := make([]string, len(loc)/2)
			for j := range g {
				if loc[2*j] >= 0 {
					g[j] = c[off+loc[2*j] : off+loc[2*j+1]]
				}
			}
			hits = append(hits, hit{start: start, rule: i, groups: g})
			off = next
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return a.rule - b.rule
	})
	for _, h := range hits {
		if hedged(c[:h.start]) || relative(c[:h.start]) {
			continue
		}
		f, ok := allRules[h.rule].build(h.groups)
		if !ok || f.content == "" || sensitive(f.content) {
			continue
		}
		return f, true
	}
	return found{}, false
}

// allRules lists the rules, most specific first: changes of fact (rules_change.go) before the
// statements they change.
var allRules = slices.Concat(changeRulesEN, changeRulesZH, englishRules, chineseRules, lifeRules)

// sentence is one sentence of a turn and whether it is a question.
type sentence struct {
	text     string
	question bool
}

// sentences splits text at . ! ? ; … and their CJK forms and at line breaks. A full stop
// only ends a sentence before a space or the end and not after an abbreviation ("Dr.",
// "e.g.", "U.S."), so "Node.js" and "3.5" stay whole.
func sentences(text string) []sentence {
	var out []sentence
	emit := func(s, term string) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		out = append(out, sentence{text: s, question: isQuestion(s, term)})
	}
	start := 0
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isTerminator(r) || (r == '.' && !fullStop(text, i)) {
			i += n
			continue
		}
		end := i
		j := i
		for j < len(text) {
			r2, n2 := utf8.DecodeRuneInString(text[j:])
			if !isTerminator(r2) && !strings.ContainsRune("\"')]}”’）」』 \t\r", r2) {
				break
			}
			j += n2
		}
		emit(text[start:end], text[end:j])
		start, i = j, j
	}
	emit(text[start:], "")
	return out
}

func isTerminator(r rune) bool {
	switch r {
	case '.', '!', '?', ';', '\n', '…', '。', '！', '？', '；', '｡':
		return true
	}
	return false
}

// fullStop reports whether the '.' at text[i] ends a sentence.
func fullStop(text string, i int) bool {
	if i+1 < len(text) {
		next, _ := utf8.DecodeRuneInString(text[i+1:])
		if !unicode.IsSpace(next) && !strings.ContainsRune("\"')]}”’", next) {
			return false
		}
	}
	// The word before the dot.
	w := i
	for w > 0 {
		r, n := utf8.DecodeLastRuneInString(text[:w])
		if !unicode.IsLetter(r) && r != '.' {
			break
		}
		w -= n
	}
	word := strings.ToLower(text[w:i])
	if strings.Contains(word, ".") && !slices.ContainsFunc(strings.Split(word, "."), func(p string) bool { return utf8.RuneCountInString(p) != 1 }) {
		return false // e.g, i.e, U.S, a.m
	}
	if utf8.RuneCountInString(word) == 1 && unicode.IsUpper(lastRune(text[:i])) {
		return false // an initial: "Sarah J. Maas"
	}
	switch word {
	case "mr", "mrs", "ms", "dr", "st", "mt", "vs", "etc", "prof", "jr", "sr", "no", "approx", "dept", "inc", "ltd", "co":
		return false
	}
	return true
}

var (
	reAuxStart = regexp.MustCompile(`(?i)^(?:do|does|did|can|could|would|should|is|are|am|was|were|will|shall|may|what|which|who|whom|whose|why|how|where|have|has)\b`)
	reZhQWords = regexp.MustCompile(`什么|哪里|哪儿|哪个|哪些|哪种|哪家|谁|怎么|为什么|多少|是不是|有没有|能不能|要不要|会不会|对不对|好不好|行不行`)
)

// isQuestion reports whether a sentence asks rather than states: it ends in a question mark,
// ends in 吗 or 呢, or starts like an English question and ends without a full stop.
func isQuestion(s, term string) bool {
	if strings.ContainsAny(term, "?？") {
		return true
	}
	t := strings.TrimRightFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) || strings.ContainsRune("啊呀啦哈", r)
	})
	if strings.HasSuffix(t, "吗") || strings.HasSuffix(t, "呢") || strings.HasSuffix(t, "么") {
		return true
	}
	if !strings.ContainsAny(term, ".!。！") && reAuxStart.MatchString(s) {
		return true
	}
	return false
}

var (
	reAskEN       = regexp.MustCompile(`(?i)\b(?:do|does|did|can|could|would|should|will|shall|am|are|is|was|were|have|has)\s+(?:you|i|we|it|they|he|she|there|that|this)\b|\b(?:what|which|how|why|where|who|whom|whose)\b`)
	rePresupposes = regexp.MustCompile(`(?i)^(?:since|because|cause|considering|given|now\s+that|especially\s+since|seeing\s+that|as\s+i)\b|^(?:因为|既然|由于)`)
)

// statementInQuestion reports whether a clause of a question states something rather than
// asks: "I live in Paris, can you recommend a restaurant?" and "…, since I'm vegetarian?"
// state; "Do I like tea?" and "What do you think I'd like?" ask. The last clause of a
// question asks unless it gives a reason.
func statementInQuestion(c string, last bool) bool {
	c = strings.TrimSpace(c)
	if reAuxStart.MatchString(c) || reAskEN.MatchString(c) || reZhQWords.MatchString(c) {
		return false
	}
	t := strings.TrimRightFunc(c, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
	if strings.HasSuffix(t, "吗") || strings.HasSuffix(t, "呢") {
		return false
	}
	return !last || rePresupposes.MatchString(c)
}

var (
	// Clause punctuation.
	reClausePunct = regexp.MustCompile(`[，：()（）\[\]【】]|:(?:\s|$)|\s[-–—]+\s|—|\.\.\.`)
	// English connectives that start a new clause; the connective stays at its start.
	reEnglishStop = regexp.MustCompile(`(?i)\s(?:but|because|cause|although|though|so\s+(?:i|i'm|i've|i'd|i'll|we|we're|it|it's|that|my|they|he|she|you)|since|considering|given|now\s+that|when|whenever|if|unless|whether|while|whereas|until|except|and\s+(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our|it|it's|that|then|also|now|so|yet|they|she|he|for|don't|do|would|need|needs|want|wants|have|had|am|was|will|can|can't|could|should|plan|hope|think|really|just|still)|or\s+(?:i|we|my))\b`)
	// A clause that opens with "my wife", "my family": "and I" after it joins the subject.
	reWeSubjectEN = regexp.MustCompile(`(?i)^\s*(?:(?:so|well|but|and|oh|btw|also)\s+)?(?:my|our)\s+(?:(?:ex-?)?(?:girlfriend|boyfriend|partner|wife|husband|fianc[ée]e?|spouse)|family|kids|parents|whole\s+family)$`)
	// Words after which a connective is part of a phrase: "a while", "even so", "ever since".
	reNotStopEN = regexp.MustCompile(`(?i)\b(?:a|even|ever|just|only|and|or|not|long|soon|as|if)$`)
	// Chinese connectives that start a new clause.
	chineseStops = []string{"因为", "但是", "不过", "可是", "所以", "而且", "然后", "并且", "虽然", "如果", "要是", "假如", "但我", "但这", "但那", "但它", "只是"}
)

// splitClausePunct splits at clause punctuation. A colon only splits before a space ("7:30"
// stays whole) and a comma not between digits ("1,000" stays whole).
func splitClausePunct(s string) []string {
	var out []string
	start := 0
	for _, loc := range reClausePunct.FindAllStringIndex(s, -1) {
		out = append(out, splitCommas(s[start:loc[0]])...)
		start = loc[1]
	}
	return append(out, splitCommas(s[start:])...)
}

// splitCommas splits at commas that are not between digits.
func splitCommas(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != ',' || (i > 0 && i+1 < len(s) && isDigitByte(s[i-1]) && isDigitByte(s[i+1])) {
			continue
		}
		out = append(out, s[start:i])
		start = i + 1
	}
	return append(out, s[start:])
}

func isDigitByte(b byte) bool { return '0' <= b && b <= '9' }

// clauses splits a sentence into clauses at clause punctuation and before connectives.
func clauses(s string) []string {
	var out []string
	for _, part := range splitClausePunct(s) {
		cuts := []int{0}
		for _, loc := range reEnglishStop.FindAllStringIndex(part, -1) {
			if reNotStopEN.MatchString(part[:loc[0]]) && !strings.Contains(strings.ToLower(part[loc[0]:loc[1]]), "and") {
				continue // "for a while", "and so on", "even so", "ever since"
			}
			if reWeSubjectEN.MatchString(part[:loc[0]]) && strings.EqualFold(strings.Join(strings.Fields(part[loc[0]:loc[1]]), " "), "and i") {
				continue // "My wife and I moved…": one subject
			}
			cuts = append(cuts, loc[0])
		}
		for _, stop := range chineseStops {
			for off := 0; ; {
				i := strings.Index(part[off:], stop)
				if i < 0 {
					break
				}
				cuts = append(cuts, off+i)
				off += i + len(stop)
			}
		}
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		for i, c := range cuts {
			end := len(part)
			if i+1 < len(cuts) {
				end = cuts[i+1]
			}
			if t := strings.TrimSpace(part[c:end]); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

var (
	reConditionalStart = regexp.MustCompile(`(?i)^(?:if|unless|whether|suppose|supposing|assuming|imagine|pretend|in\s+case|what\s+if|even\s+if|as\s+if|as\s+though)\b|^(?:如果|要是|假如|假设|万一|即使|就算|哪怕|除非)`)
	reHedgedEN         = regexp.MustCompile(`(?i)\b(?:if|unless|whether|maybe|perhaps|wonder|wondering|not\s+sure|unsure|don't\s+think|do\s+not\s+think|don't\s+know|do\s+not\s+know|doubt|wish|hope|hoping|imagine|pretend|suppose|would|wouldn't|might|could|should|doesn't\s+mean|does\s+not\s+mean|never\s+said|not\s+that|ask|asked|asking|you|your|pretending|said\s+that|used\s+to|thought|think\s+that)\b`)
	reHedgedZH         = regexp.MustCompile(`如果|要是|假如|假设|万一|也许|可能|或许|不知道|不确定|是否|想象|希望|会不会|要不要|你觉得|你认为|你说|是不是|以为|假装|好像|似乎|说不定|别人|朋友说|听说`)
)

var reRelativeEN = regexp.MustCompile(`(?i)\b(?:what|which|that|who|whom|where|how|why|whatever|thing|things|stuff|part|one|ones|everything|anything|something|all|much)\s*$`)

// relative reports whether a match sits in a relative clause ("what I love most is…", "the
// things I like are…", "one thing I hate is…"), where the pattern's object is not its own.
func relative(prefix string) bool {
	return reRelativeEN.MatchString(prefix) || strings.HasSuffix(strings.TrimSpace(prefix), "的")
}

// conditionalStart reports whether a clause is a condition rather than a statement.
func conditionalStart(c string) bool { return reConditionalStart.MatchString(c) }

// hedged reports whether the text of a clause before a match makes it hypothetical, hedged,
// reported or about someone else's view ("I'm not sure I like it", "you said I live in…").
func hedged(prefix string) bool {
	return reHedgedEN.MatchString(prefix) || reHedgedZH.MatchString(prefix)
}

var (
	reEmail     = regexp.MustCompile(`[^\s@]+@[^\s@]+\.[^\s@]+`)
	reDigitRun  = regexp.MustCompile(`\d[\d\s().+-]{5,}\d`)
	reSecret    = regexp.MustCompile(`(?i)\b(?:sk|pk|rk)[-_][a-z0-9_-]{10,}|\bgh[pousr]_[a-z0-9]{10,}|\bxox[abpr]-[a-z0-9-]{10,}|\bakia[a-z0-9]{12,}|\beyj[a-z0-9_-]{10,}\.`)
	reLongToken = regexp.MustCompile(`[A-Za-z0-9_]{24,}`)
	reStreet    = regexp.MustCompile(`(?i)\b\d+[a-z]?\s+(?:[a-z]+\s+){1,3}(?:street|st|road|rd|avenue|ave|lane|ln|drive|boulevard|blvd|court|ct)\b|[路街道巷弄]\d+号|\d+室|\d+栋|\d+单元|\d+弄`)
	reDate      = regexp.MustCompile(`^(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})$`)
	reSensitive = regexp.MustCompile(`(?i)\b(?:password|passcode|passphrase|pin\s+code|social\s+security|ssn|credit\s+card|card\s+number|bank\s+account|iban|passport\s+number|api\s+key|access\s+token|secret\s+key|phone\s+number|e-?mail\s+address)\b|密码|验证码|身份证|银行卡|信用卡|手机号|电话号码|邮箱|护照号`)
)

// sensitiveHints are the strings without which sensitive has nothing to find in a text
// without digits or '@'.
var sensitiveHints = []string{"pass", "pin", "social", "ssn", "card", "bank", "iban", "api", "token", "secret",
	"phone", "mail", "sk-", "sk_", "pk-", "pk_", "rk-", "rk_", "gh", "xox", "akia", "eyj",
	"密码", "验证码", "身份证", "银行卡", "信用卡", "手机号", "电话", "邮箱", "护照"}

// sensitive reports whether a candidate's text holds contact details or secrets, which Rules
// never stores.
func sensitive(s string) bool {
	if !strings.ContainsAny(s, "@0123456789") {
		lower := strings.ToLower(s)
		if !slices.ContainsFunc(sensitiveHints, func(h string) bool { return strings.Contains(lower, h) }) {
			return false
		}
	}
	if reEmail.MatchString(s) || reStreet.MatchString(s) || reSensitive.MatchString(s) || reSecret.MatchString(s) {
		return true
	}
	for _, m := range reLongToken.FindAllString(s, -1) {
		if strings.ContainsAny(m, "0123456789") && strings.IndexFunc(m, unicode.IsLetter) >= 0 {
			return true
		}
	}
	for _, m := range reDigitRun.FindAllString(s, -1) {
		if reDate.MatchString(strings.TrimSpace(m)) {
			continue
		}
		n := 0
		for _, r := range m {
			if '0' <= r && r <= '9' {
				n++
			}
		}
		if n >= 7 {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '_'
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

func runeLen(s string) int {
	_, n := utf8.DecodeRuneInString(s)
	return n
}

// hasHan reports whether s contains a Han, kana or Hangul character.
func hasHan(s string) bool {
	for _, r := range s {
		if isCJK(r) {
			return true
		}
	}
	return false
}

// longEnough reports whether an object says something: at least two characters, or one
// Han character.
func longEnough(s string) bool {
	return utf8.RuneCountInString(s) >= 2 || hasHan(s)
}

const (
	// maxObject bounds an object in characters; longer ones are rambling, not facts.
	maxObject = 120
	// maxClause bounds a clause in bytes: a longer run without punctuation holds no object
	// short enough, and the bound keeps matching linear in the turn's length.
	maxClause = 1500
	// maxHitsPerRule bounds the places one rule is tried in one clause ("I love it, I
	// love that… I love Go" needs more than one).
	maxHitsPerRule = 8
)
