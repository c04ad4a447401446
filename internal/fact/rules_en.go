package fact

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// advEN is any run of adverbs and softeners between "I" and its verb ("I really like",
// "I'm currently working on", "I do prefer").
const advEN = `(?:(?:really|also|actually|just|still|totally|absolutely|definitely|genuinely|truly|do|honestly|personally|generally|usually|mostly|always|even|especially|particularly|now|currently|recently|finally|already|kind\s+of|kinda|sort\s+of|tend\s+to|very\s+much|much|simply|mainly|strongly|deeply|secretly|certainly|typically|normally|primarily|happen\s+to|officially|permanently)\s+)*`

// en compiles an English rule: case-insensitive, {ADV} standing for advEN.
func en(name, pattern string, build func(g []string) (found, bool)) rule {
	pattern = strings.ReplaceAll(pattern, "{ADV}", advEN)
	return newRule(name, pattern, true, build)
}

// englishRules, most specific first. Each pattern's last group is the object, which runs to
// the end of the clause.
var englishRules = []rule{
	// "my favourite programming language is Go" -> key user.favorite_language.
	en("favourite", `\bmy\s+(?:(?:absolute|all[- ]time|very|personal|current|own)\s+)?(favou?rite)\s+(.+?)\s+(is|are|has\s+to\s+be|would\s+be|has\s+always\s+been|'s)\s+(.+)$`, func(g []string) (found, bool) {
		thing := strings.Join(strings.Fields(g[2]), " ")
		if len(strings.Fields(thing)) > 5 || reVagueThing.MatchString(thing) {
			return found{}, false
		}
		obj, ok := cleanEN(g[4])
		if !ok || vagueEN(obj) {
			return found{}, false
		}
		verb := strings.ToLower(strings.Join(strings.Fields(g[3]), " "))
		if verb == "'s" {
			verb = "is"
		}
		key := ""
		if k := favouriteKeyEN(thing); k != "" {
			key = "user.favorite_" + k
		}
		return found{
			content:    "The user's " + strings.ToLower(g[1]) + " " + rewriteEN(thing) + " " + verb + " " + obj,
			category:   CategoryPreference,
			key:        key,
			confidence: 0.9,
		}, true
	}),
	// "my name is Ana", "call me Ana", "I go by Ana" -> key user.name.
	en("name", `\bmy\s+name(?:\s+is|'s)\s+(.+)$`, func(g []string) (found, bool) { return nameEN(g[1], false) }),
	en("call-me", `\b(?:call|calling)\s+me\s+(.+)$`, func(g []string) (found, bool) { return nameEN(g[1], true) }),
	en("go-by", `\bi\s+{ADV}go\s+by\s+(.+)$`, func(g []string) (found, bool) { return nameEN(g[1], true) }),
	// "my birthday is May 3" and a few other slots; never contact details (see the package
	// documentation).
	en("slot", `\bmy\s+(birthday|date\s+of\s+birth|hometown|home\s+town|occupation|profession|native\s+language|first\s+language|mother\s+tongue|time\s*zone)\s+(?:is|was)\s+(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanEN(g[2])
		if !ok || vagueEN(obj) {
			return found{}, false
		}
		slot := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		key := slotKeysEN[slot]
		cat := CategoryIdentity
		return found{content: "The user's " + slot + " is " + obj, category: cat, key: key, confidence: 0.9}, true
	}),
	// "I live in Berlin", "I moved to Berlin", "I'm based in Berlin" -> key user.city.
	en("live", `\bi(?:\s+|'m\s+|\s+am\s+|'ve\s+|\s+have\s+)(?:{ADV}(?:been\s+)?)(live|reside|living|residing|lived)\s+in\s+(.+)$`, func(g []string) (found, bool) {
		if strings.EqualFold(g[1], "lived") && !reHaveEN.MatchString(g[0]) { // "I lived in Rome" is history
			return found{}, false
		}
		return placeEN("The user lives in ", g[2], "user.city", CategoryIdentity, true)
	}),
	en("moved", `\bi(?:'ve|\s+have)?\s+{ADV}(?:moved|relocated)\s+(?:over\s+|back\s+)?to\s+(.+)$`, func(g []string) (found, bool) {
		// Where the user lives now: "where do I live?" finds it.
		if f, ok := placeEN("The user lives in ", g[1], "user.city", CategoryOther, false); ok {
			return f, true
		}
		return placeEN("The user moved to ", g[1], "user.city", CategoryOther, true)
	}),
	en("based", `\bi(?:'m|\s+am)\s+{ADV}based\s+(?:in|out\s+of)\s+(.+)$`, func(g []string) (found, bool) {
		return placeEN("The user is based in ", g[1], "user.city", CategoryIdentity, true)
	}),
	en("from", `\bi(?:'m|\s+am)\s+{ADV}(?:originally\s+)?from\s+(.+)$`, func(g []string) (found, bool) {
		return placeEN("The user is from ", g[1], "user.hometown", CategoryIdentity, false)
	}),
	// "I work at Acme", "I work for Acme" -> key user.employer.
	en("employer", `\bi(?:\s+|'m\s+|\s+am\s+|'ve\s+|\s+have\s+){ADV}(?:been\s+{ADV})?(work|working|worked)\s+(at|for)\s+(.+)$`, func(g []string) (found, bool) {
		if strings.EqualFold(g[1], "worked") && !reHaveEN.MatchString(g[0]) { // "I worked at" is history
			return found{}, false
		}
		return employerEN(strings.ToLower(g[2]), g[3])
	}),
	en("work-as", `\bi\s+{ADV}work\s+as\s+(an?\s+.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanEN(cutAt(g[1], reCutOrgEN))
		if !ok {
			return found{}, false
		}
		return found{content: "The user works as " + obj, category: CategoryIdentity, key: "user.occupation", confidence: 0.85}, true
	}),
	// "I work on / I'm working on / I've been working on X" -> project.
	en("work-on", `\bi\s+{ADV}work\s+on\s+(.+)$`, func(g []string) (found, bool) {
		return simpleEN("The user works on ", g[1], CategoryProject, 0.7)
	}),
	en("working-on", `\bi(?:'m|\s+am)\s+{ADV}working\s+on\s+(.+)$`, func(g []string) (found, bool) {
		return simpleEN("The user is working on ", g[1], CategoryProject, 0.7)
	}),
	en("been-working-on", `\bi(?:'ve|\s+have)\s+{ADV}been\s+{ADV}working\s+on\s+(.+)$`, func(g []string) (found, bool) {
		return simpleEN("The user has been working on ", g[1], CategoryProject, 0.7)
	}),
	// "I'm a developer", "I'm a big fan of jazz", "I'm vegetarian", "I'm allergic to peanuts".
	en("i-am-a", `\bi(?:'m|\s+am)\s+{ADV}(an?\s+.+)$`, func(g []string) (found, bool) { return roleEN(g[1]) }),
	en("i-am-adj", `\bi(?:'m|\s+am)\s+{ADV}((?:vegetarian|vegan|pescatarian|lactose[- ]intolerant|gluten[- ]intolerant|left[- ]handed|right[- ]handed|retired|self[- ]employed|colou?r[- ]blind|diabetic|allergic\s+to)\b.*)$`, func(g []string) (found, bool) {
		obj, ok := cleanEN(g[1])
		if !ok || strings.EqualFold(strings.TrimSpace(obj), "allergic to") {
			return found{}, false
		}
		key := ""
		switch w := wordsEN(obj); w[0] {
		case "vegetarian", "vegan", "pescatarian":
			key = keyDiet // a diet changes: "I'm not vegetarian anymore" supersedes it
		case "retired", "self-employed":
			key = "user.employer"
		}
		return found{content: "The user is " + obj, category: CategoryIdentity, key: key, confidence: 0.85}, true
	}),
	// Preferences.
	en("pref", `\bi\s+{ADV}(prefer|like|love|enjoy|adore|hate|dislike|detest|loathe|can't\s+stand|cannot\s+stand)\s+(.+)$`, func(g []string) (found, bool) {
		verb := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		return prefEN("The user "+prefVerbsEN[verb]+" ", g[2])
	}),
	en("pref-not", `\bi\s+(?:don't|do\s+not|dont)\s+{ADV}(like|enjoy|love|care\s+for)\s+(.+)$`, func(g []string) (found, bool) {
		verb := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		return prefEN("The user does not "+verb+" ", g[2])
	}),
	// Decisions.
	en("decided", `\b(i|we)(?:'ve|\s+have)?\s+{ADV}(decided|agreed)\s+(to|on|against|that)\s+(.+)$`, func(g []string) (found, bool) {
		subject := "The user "
		if strings.EqualFold(g[1], "we") {
			subject = "The user and others "
		}
		return decisionEN(subject+strings.ToLower(g[2])+" "+strings.ToLower(g[3])+" ", g[4])
	}),
	en("opted", `\b(i|we)(?:'ve|\s+have)?\s+{ADV}opted\s+(to|for)\s+(.+)$`, func(g []string) (found, bool) {
		subject := "The user "
		if strings.EqualFold(g[1], "we") {
			subject = "The user and others "
		}
		return decisionEN(subject+"opted "+strings.ToLower(g[2])+" ", g[3])
	}),
	en("lets", `\blet(?:'s|\s+us)\s+(?:just\s+)?(use|go\s+with|stick\s+with|switch\s+to|pick|choose|adopt|migrate\s+to)\s+(.+)$`, func(g []string) (found, bool) {
		verb := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		return decisionEN("The user decided to "+verb+" ", g[2])
	}),
	// Project settings.
	en("our-project", `\b(?:our|my|this)\s+(project|app|application|service|codebase|code\s+base|backend|back-end|frontend|front-end|stack|product|website|site|repo|repository|system|api|server|infrastructure|pipeline)\s+{ADV}(uses|is\s+using|is\s+written\s+in|is\s+built\s+(?:with|on|in)|runs\s+on|relies\s+on|is\s+based\s+on|is\s+hosted\s+on|is\s+deployed\s+(?:on|to))\s+(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanEN(g[3])
		if !ok || vagueEN(obj) {
			return found{}, false
		}
		thing := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		verb := strings.ToLower(strings.Join(strings.Fields(g[2]), " "))
		key := ""
		if strings.Contains(verb, "written in") {
			key = "project.language"
		} else if c := techClass(obj); c != "" {
			key = "project." + c
		}
		return found{content: "The user's " + thing + " " + verb + " " + obj, category: CategoryProject, key: key, confidence: 0.8}, true
	}),
	en("we-use", `\bwe(?:'re|\s+are)?\s+{ADV}(use|using)\s+(.+?)(?:\s+(for|as)\s+(.+))?$`, func(g []string) (found, bool) {
		tool, ok := cleanEN(g[2])
		if !ok || vagueEN(tool) || reVagueTool.MatchString(tool) {
			return found{}, false
		}
		content := "The user's team uses " + tool
		key := ""
		if c := techClass(tool); c != "" {
			key = "project." + c
		}
		if g[4] != "" {
			what, ok := cleanEN(g[4])
			if !ok {
				return found{}, false
			}
			content += " " + strings.ToLower(g[3]) + " " + what
			if key == "" {
				key = purposeKeyEN(what)
			}
		}
		return found{content: content, category: CategoryProject, key: key, confidence: 0.7}, true
	}),
}

var (
	reHaveEN     = regexp.MustCompile(`(?i)\bi(?:'ve|\s+have)\b`)
	reVagueThing = regexp.MustCompile(`(?i)\b(?:you|your|thing\s+about|part\s+of|one|ones|it|this|that)\b`)
	reVagueTool  = regexp.MustCompile(`(?i)^(?:a\s+lot|lots|many|some|all|the\s+same|different|whatever|both|each|several|more|less|only|to)\b`)
	// Where a place name ends: "Berlin with my wife", "Berlin last year", "Berlin for work".
	reCutPlaceEN = regexp.MustCompile(`(?i)\s+(?:with|for|since|near|where|and|at|on|in\s+\d|in\s+(?:january|february|march|april|may|june|july|august|september|october|november|december|spring|summer|autumn|fall|winter)|last|this|next|a\s+few|about|around|recently|now|nowadays|currently|from|to|after|before|during|because|which|that|who|\d+|one|two|three|four|five|six|seven|eight|nine|ten|several|many|some|a\s+couple|a\s+year|a\s+month|a\s+week|years|months|weeks|ago|back|already|permanently|temporarily)\b`)
	// Where an employer's name ends: "Acme as an engineer", "Acme in Berlin".
	reCutOrgEN  = regexp.MustCompile(`(?i)\s+(?:as|since|in|on|with|where|and|from|during|until|last|this|these|now|currently|part-time|full-time|remotely|for\s+(?:\d|a|about|almost|over|the\s+(?:past|last)|years|months)|\d+)\b`)
	reFillerEN  = regexp.MustCompile(`(?i)\s+(?:myself|so\s+much|a\s+lot|very\s+much|too|as\s+well|anyway|anyways|though|lol|haha|really|now|these\s+days|nowadays|honestly|actually|right\s+now|at\s+the\s+moment|by\s+the\s+way|btw|either|tbh|to\s+be\s+honest|lately|recently|for\s+a\s+while)$`)
	rePronounEN = regexp.MustCompile(`(?i)\bi\s+am\b|\bi\s+was\b|\b(?:i'm|i've|i'd|i'll|i|my|me|mine|myself)\b`)
)

var pronounsEN = map[string]string{
	"i am": "they are", "i was": "they were", "i'm": "they are", "i've": "they have", "i'd": "they would",
	"i'll": "they will", "i": "they", "my": "their", "me": "them", "mine": "theirs", "myself": "themselves",
}

// rewriteEN turns the first person into the third ("my sister" -> "their sister").
func rewriteEN(s string) string {
	return rePronounEN.ReplaceAllStringFunc(s, func(m string) string {
		return pronounsEN[strings.ToLower(strings.Join(strings.Fields(m), " "))]
	})
}

// cleanEN trims an object, drops trailing fillers ("so much", "too"), rewrites pronouns and
// checks its length.
func cleanEN(s string) (string, bool) {
	s = strings.Join(strings.Fields(s), " ")
	for {
		t := strings.TrimRightFunc(s, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(".,!?;:~-–—…*", r) || unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r)
		})
		t = reFillerEN.ReplaceAllString(t, "")
		if t == s {
			break
		}
		s = t
	}
	s = balanceQuotes(strings.TrimSpace(s))
	s = rewriteEN(s)
	if !longEnough(s) || utf8.RuneCountInString(s) > maxObject {
		return "", false
	}
	return s, true
}

var (
	vagueFirstEN = set("it", "it's", "its", "that", "that's", "this", "these", "those", "them", "they", "you", "your", "yours",
		"him", "her", "his", "what", "how", "when", "where", "why", "which", "who", "whatever", "everything", "something",
		"anything", "nothing", "so", "too", "very", "as", "one", "ones", "here", "there", "up", "out", "about", "if",
		"whether", "with", "because", "but", "and", "or", "not", "no", "yes", "ok", "okay", "thanks", "thank", "we", "us",
		"they", "more", "less", "such", "doing", "being", "better", "best", "most", "least", "worse", "worst",
		"either", "neither", "none", "other", "others", "another", "plenty", "lots")
	determinersEN = set("the", "these", "those", "this", "that", "your", "such", "all", "both", "some", "any", "each", "most", "a", "an", "of", "its", "their")
	metaNounsEN   = set("idea", "ideas", "suggestion", "suggestions", "recommendation", "recommendations", "tip", "tips", "list",
		"lists", "plan", "plans", "option", "options", "sound", "sounds", "way", "fact", "approach", "point", "points",
		"advice", "answer", "answers", "response", "responses", "thought", "thoughts", "concept", "format", "template",
		"look", "results", "result", "question", "questions", "explanation", "explanations", "example", "examples", "summary",
		"breakdown", "outline", "structure", "detail", "details", "info", "information", "insight", "insights",
		"perspective", "help", "feedback", "input", "idea", "suggestion", "proposal", "version", "draft", "one", "ones",
		"rest", "first", "second", "last", "latter", "former", "part", "schedule", "timeline", "itinerary", "routine",
		"workout", "recipe", "recipes", "changes", "edits", "revisions", "wording", "title", "titles", "name", "names")
	// "I love to hear that", "I hate to say it": polite phrases, not preferences.
	politeToEN = set("say", "ask", "bother", "admit", "think", "know", "hear", "see", "interrupt", "imagine", "mention",
		"point", "disappoint", "complain", "trouble", "break", "be", "have", "get", "help", "chat", "talk", "read", "learn", "share", "do")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// wordsEN splits s into lower-case words without surrounding punctuation.
func wordsEN(s string) []string {
	f := strings.Fields(strings.ToLower(s))
	for i, w := range f {
		f[i] = strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
	}
	return f
}

// vagueEN reports whether an object only points elsewhere: "it", "that", "your idea",
// "the suggestions", "to hear that".
func vagueEN(obj string) bool {
	w := wordsEN(obj)
	if len(w) == 0 {
		return true
	}
	if vagueFirstEN[w[0]] {
		return true
	}
	if w[0] == "to" && (len(w) == 1 || politeToEN[w[1]]) {
		return true
	}
	// "the exercises you suggested", "flipping through them": about the chat or leaning on
	// something said before.
	for _, x := range w {
		if set("you", "your", "yours", "them", "those", "these", "suggested", "recommended", "mentioned", "provided", "listed", "shared")[x] {
			return true
		}
	}
	// "hearing that", "seeing you", "getting it".
	if strings.HasSuffix(w[0], "ing") && len(w) >= 2 && set("that", "it", "this", "them", "you", "your", "from", "back", "these", "those")[w[1]] {
		return true
	}
	if determinersEN[w[0]] {
		rest := 0
		for i, x := range w {
			if (i < 4 || i == len(w)-1) && metaNounsEN[x] {
				return true
			}
			// "the flavor it adds": the object leans on something said before.
			if i > 0 && set("it", "this", "that", "them", "these", "those")[x] {
				return true
			}
			if !determinersEN[x] && !vagueFirstEN[x] {
				rest++
			}
		}
		if rest == 0 {
			return true
		}
	}
	return false
}

var prefVerbsEN = map[string]string{
	"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "adores", "hate": "hates",
	"dislike": "dislikes", "detest": "detests", "loathe": "loathes", "can't stand": "cannot stand", "cannot stand": "cannot stand",
}

func prefEN(prefix, obj string) (found, bool) {
	o, ok := cleanEN(obj)
	if !ok || vagueEN(o) {
		return found{}, false
	}
	return found{content: prefix + o, category: CategoryPreference, confidence: 0.8}, true
}

func simpleEN(prefix, obj, category string, confidence float64) (found, bool) {
	o, ok := cleanEN(obj)
	if !ok || vagueEN(o) {
		return found{}, false
	}
	return found{content: prefix + o, category: category, confidence: confidence}, true
}

func decisionEN(prefix, obj string) (found, bool) {
	o, ok := cleanEN(obj)
	if !ok {
		return found{}, false
	}
	w := wordsEN(o)
	if len(w) == 0 || (vagueEN(o) && !strings.HasSuffix(prefix, "that ")) || set("up", "it", "this", "that", "one", "something")[w[0]] {
		return found{}, false
	}
	for _, x := range w {
		if set("it", "them", "this", "that", "these", "those")[x] {
			return found{}, false
		}
	}
	return found{content: prefix + o, category: CategoryDecision, confidence: 0.75}, true
}

// cutAt returns s up to the first match of re.
func cutAt(s string, re *regexp.Regexp) string {
	if loc := re.FindStringIndex(s); loc != nil {
		return s[:loc[0]]
	}
	return s
}

// placeLike reports whether s reads as a place name: capitalised ("Berlin", "the Bay Area")
// or in a script without case.
func placeLike(s string) bool {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "the "); ok {
		s = rest
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r) || (unicode.IsLetter(r) && !unicode.IsLower(r))
}

// placeEN builds a keyed fact about where the user is when the object names a place, and
// otherwise (keyless allowed) an unkeyed one: "I live in a small town".
func placeEN(prefix, obj, key, keylessCategory string, keylessAllowed bool) (found, bool) {
	place, ok := cleanEN(cutAt(obj, reCutPlaceEN))
	if ok && placeLike(place) && !vagueEN(place) {
		return found{content: prefix + place, category: CategoryIdentity, key: key, confidence: 0.9}, true
	}
	if !keylessAllowed {
		return found{}, false
	}
	o, ok := cleanEN(obj)
	if !ok || vagueEN(o) {
		return found{}, false
	}
	if w := wordsEN(o); len(w) < 2 || !set("a", "an", "the", "their", "our")[w[0]] {
		return found{}, false
	}
	return found{content: prefix + o, category: keylessCategory, confidence: 0.7}, true
}

var notEmployerEN = set("home", "night", "nights", "weekend", "weekends", "times", "least", "all", "once", "it", "this",
	"that", "moment", "desk", "office", "work", "day", "days", "weekday", "weekdays", "free", "fun", "money", "a", "an",
	"the", "them", "you", "me", "hours", "hour", "minutes", "least", "most", "length", "random", "school", "myself")

// employerEN builds "The user works at X" keyed user.employer, or "self-employed".
func employerEN(prep, obj string) (found, bool) {
	org, ok := cleanEN(cutAt(obj, reCutOrgEN))
	if !ok {
		return found{}, false
	}
	w := wordsEN(org)
	if prep == "for" && len(w) == 1 && (w[0] == "themselves" || w[0] == "myself") {
		return found{content: "The user is self-employed", category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
	}
	i := 0
	if len(w) > 1 && set("a", "an", "the")[w[0]] {
		i = 1
	}
	if len(w) == 0 || notEmployerEN[w[i]] || vagueEN(org) {
		return found{}, false
	}
	return found{content: "The user works " + prep + " " + org, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
}

// nameEN builds "The user's name is X" keyed user.name. A name is up to four capitalised
// words; without capitals, up to two words when capitals are not required ("my name is bob").
func nameEN(obj string, requireCapital bool) (found, bool) {
	obj = cutAt(obj, regexp.MustCompile(`(?i)\s+(?:from\s+now\s+on|instead|please|for\s+short|by\s+the\s+way)\b`))
	var name []string
	fields := strings.Fields(obj)
	for len(fields) > 0 && set("actually", "just", "simply", "now", "still", "officially")[strings.ToLower(fields[0])] {
		fields = fields[1:]
	}
	for _, f := range fields {
		f = strings.TrimRightFunc(f, func(r rune) bool { return unicode.IsPunct(r) && r != '.' })
		f = strings.TrimRight(f, ".")
		r, _ := utf8.DecodeRuneInString(f)
		if f == "" || !(unicode.IsUpper(r) || (unicode.IsLetter(r) && !unicode.IsLower(r))) || len(name) == 4 {
			break
		}
		name = append(name, f)
	}
	if len(name) > 0 && notNameEN[strings.ToLower(name[0])] {
		return found{}, false
	}
	if len(name) == 0 && !requireCapital && len(fields) >= 1 && len(fields) <= 2 {
		ok := true
		for _, f := range fields {
			if notNameEN[strings.ToLower(f)] || strings.IndexFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' && r != '\'' }) >= 0 {
				ok = false
			}
		}
		if ok {
			name = fields
		}
	}
	if len(name) == 0 {
		return found{}, false
	}
	n := strings.Join(name, " ")
	if !longEnough(n) {
		return found{}, false
	}
	return found{content: "The user's name is " + n, category: CategoryIdentity, key: "user.name", confidence: 0.9}, true
}

var notNameEN = set("not", "a", "an", "the", "very", "so", "too", "also", "kind", "sort", "being", "going", "what",
	"secret", "private", "none", "irrelevant", "unknown", "long", "hard", "weird", "difficult", "common", "unusual",
	"spelled", "pronounced", "i", "me", "you", "it", "that", "this", "back", "later", "anytime", "now", "tomorrow",
	"today", "tonight", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
	"february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december",
	"crazy", "old-fashioned", "maybe", "if", "when", "on", "at", "in", "whatever", "anything", "sir", "madam", "ma'am", "and", "or", "but")

var slotKeysEN = map[string]string{
	"birthday": "user.birthday", "date of birth": "user.birthday", "hometown": "user.hometown", "home town": "user.hometown",
	"occupation": "user.occupation", "profession": "user.occupation", "native language": "user.native_language",
	"first language": "user.native_language", "mother tongue": "user.native_language", "time zone": "user.timezone",
	"timezone": "user.timezone",
}

var (
	occupationsEN = set("developer", "engineer", "programmer", "coder", "teacher", "professor", "lecturer", "student",
		"designer", "doctor", "physician", "nurse", "surgeon", "dentist", "lawyer", "attorney", "accountant", "architect",
		"scientist", "researcher", "analyst", "manager", "consultant", "writer", "author", "journalist", "editor",
		"artist", "musician", "photographer", "chef", "cook", "baker", "pharmacist", "therapist", "psychologist",
		"veterinarian", "vet", "pilot", "mechanic", "electrician", "plumber", "carpenter", "farmer", "entrepreneur",
		"founder", "co-founder", "cofounder", "freelancer", "contractor", "intern", "administrator", "sysadmin",
		"technician", "marketer", "salesperson", "recruiter", "librarian", "translator", "interpreter", "officer",
		"firefighter", "paramedic", "soldier", "cashier", "barista", "waiter", "waitress", "bartender", "driver",
		"tutor", "coach", "trainer", "ceo", "cto", "cfo", "coo", "tester", "illustrator", "animator", "producer",
		"director", "actor", "actress", "dancer", "singer", "composer", "economist", "statistician", "mathematician",
		"physicist", "chemist", "biologist", "historian", "linguist", "copywriter", "blogger", "streamer", "youtuber",
		"investor", "banker", "trader", "realtor", "agent", "clerk", "receptionist", "secretary", "assistant",
		"hacker", "devops", "sre", "pm", "qa", "phd", "postdoc",
		"midwife", "caregiver", "social worker", "counselor", "counsellor", "optometrist", "radiologist",
		"physiotherapist", "nutritionist", "dietitian", "stylist", "hairdresser", "tailor", "welder", "builder",
		"landlord", "professional", "specialist", "executive", "maintainer")
	identityNounsEN = set("vegetarian", "vegan", "pescatarian", "parent", "mom", "mum", "dad", "mother", "father",
		"beginner", "novice", "runner", "cyclist", "gamer", "homeowner", "renter", "introvert", "extrovert", "retiree",
		"grandparent", "grandmother", "grandfather", "newbie", "coffee drinker", "tea drinker", "night owl",
		"early bird", "morning person", "night person", "cat person", "dog person", "native speaker", "expat",
		"immigrant", "veteran", "climber", "swimmer", "hiker", "reader", "collector", "graduate", "undergrad",
		"undergraduate", "alumnus", "alumna")
	stopScanEN = set("of", "about", "at", "in", "with", "for", "to", "from", "and", "or", "who", "that", "which", "than",
		"like", "but", "because", "when", "if", "by", "on")
)

// roleEN reads "a/an X" after "I'm": an occupation (key user.occupation), another identity
// ("a vegetarian", "a night owl") or a fan ("a big fan of jazz", a preference). Anything else
// ("a bit tired", "a little confused") is not a fact.
func roleEN(obj string) (found, bool) {
	o, ok := cleanEN(obj)
	if !ok {
		return found{}, false
	}
	w := wordsEN(o)
	if len(w) < 2 {
		return found{}, false
	}
	for i := 1; i < len(w) && i <= 5; i++ {
		x := w[i]
		if x == "fan" || x == "fans" || x == "lover" || x == "enthusiast" || x == "aficionado" {
			if i+2 < len(w) && w[i+1] == "of" || x != "fan" && x != "fans" {
				return found{content: "The user is " + o, category: CategoryPreference, confidence: 0.8}, true
			}
			return found{}, false
		}
		if stopScanEN[x] {
			break
		}
		two := ""
		if i+1 < len(w) {
			two = x + " " + w[i+1]
		}
		if occupationsEN[strings.TrimSuffix(x, "s")] || occupationsEN[x] || occupationsEN[two] {
			return found{content: "The user is " + o, category: CategoryIdentity, key: "user.occupation", confidence: 0.8}, true
		}
		if identityNounsEN[x] || identityNounsEN[two] {
			key := ""
			if x == "vegetarian" || x == "vegan" || x == "pescatarian" {
				key = keyDiet
			}
			return found{content: "The user is " + o, category: CategoryIdentity, key: key, confidence: 0.8}, true
		}
	}
	return found{}, false
}

var favouriteThingsEN = map[string]string{
	"programming language": "language", "language": "language", "coding language": "language",
	"color": "color", "colour": "color", "food": "food", "dish": "dish", "meal": "food", "fruit": "fruit",
	"vegetable": "vegetable", "movie": "movie", "film": "movie", "book": "book", "novel": "book", "song": "song",
	"band": "band", "singer": "singer", "artist": "artist", "musician": "artist", "sport": "sport", "team": "team",
	"game": "game", "video game": "game", "board game": "board_game", "drink": "drink", "beverage": "drink",
	"cuisine": "cuisine", "animal": "animal", "season": "season", "city": "city", "country": "country",
	"editor": "editor", "text editor": "editor", "ide": "editor", "author": "author", "writer": "author",
	"tv show": "show", "show": "show", "series": "show", "restaurant": "restaurant", "holiday": "holiday",
	"number": "number", "flower": "flower", "genre": "genre", "music": "music", "framework": "framework",
	"database": "database", "operating system": "os", "os": "os", "dessert": "dessert", "snack": "snack",
	"actor": "actor", "actress": "actor", "podcast": "podcast", "car": "car", "brand": "brand", "subject": "subject",
	"hobby": "hobby", "place": "place", "coffee": "coffee", "tea": "tea", "beer": "beer", "wine": "wine",
	"pizza topping": "pizza_topping", "ice cream flavor": "ice_cream_flavor", "ice cream flavour": "ice_cream_flavor",
	"director": "director", "composer": "composer", "painter": "painter", "poet": "poet", "player": "player",
	"destination": "destination", "travel destination": "destination", "pet": "pet", "breakfast": "breakfast",
}

// favouriteKeyEN maps "programming language" to "language"; "" when the thing is not known.
func favouriteKeyEN(thing string) string {
	t := strings.ToLower(strings.Join(strings.Fields(thing), " "))
	if k, ok := favouriteThingsEN[t]; ok {
		return k
	}
	if s, ok := strings.CutSuffix(t, "s"); ok {
		return favouriteThingsEN[s]
	}
	return ""
}

// purposeKeyEN turns the purpose in "we use X for Y" into "project.y" when Y is one or two
// plain words ("the database", "CI", "error tracking").
func purposeKeyEN(what string) string {
	w := wordsEN(what)
	for len(w) > 0 && set("the", "our", "their", "all", "its", "a", "an")[w[0]] {
		w = w[1:]
	}
	if len(w) == 0 || len(w) > 2 {
		return ""
	}
	for _, x := range w {
		if x == "" || strings.IndexFunc(x, func(r rune) bool { return !('a' <= r && r <= 'z') && !('0' <= r && r <= '9') }) >= 0 {
			return ""
		}
		if vagueFirstEN[x] || metaNounsEN[x] {
			return ""
		}
	}
	return "project." + strings.Join(w, "_")
}

// balanceQuotes drops a dangling quote at either end ("Inception" cut by a comma) and gives ""
// when the quotes still do not pair up.
func balanceQuotes(s string) string {
	odd := func(s string) bool {
		return (strings.Count(s, "\"")+strings.Count(s, "“")+strings.Count(s, "”"))%2 == 1
	}
	if !odd(s) {
		return s
	}
	for _, q := range []string{"\"", "”"} {
		if t, ok := strings.CutSuffix(s, q); ok && !odd(t) {
			return strings.TrimSpace(t)
		}
	}
	return ""
}
