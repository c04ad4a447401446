package fact

import (
	"regexp"
	"strings"
)

// lifeRules read the everyday facts people mention in passing ("by the way, I've been taking
// a stand-up comedy class", "I have two cats", "I just finished reading Dune", "I go to the
// gym every Tuesday", "my highest score is 124 points", 我养了一只猫, 我每周去两次健身房).
// They are broader than the other rules, so they come last, yield category "other" (or
// "preference" for "I've been into X") with a lower confidence, and require a concrete
// object: a number, an article and a noun, or a frequency.
var lifeRules = []rule{
	en("been-into", `\bi(?:'ve|\s+have)\s+{ADV}been\s+{ADV}(?:really\s+)?into\s+(.+)$`, func(g []string) (found, bool) {
		return lifeEN("The user has been into ", g[1], CategoryPreference, 0.6)
	}),
	en("been-doing", `\bi(?:'ve|\s+have)\s+{ADV}been\s+{ADV}([a-z]+ing(?:\s+(?:up|out|in|off|back|down))?)\s+(.+)$`, func(g []string) (found, bool) {
		verb := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		if notOngoingEN[strings.Fields(verb)[0]] {
			return found{}, false
		}
		return lifeEN("The user has been "+verb+" ", g[2], CategoryOther, 0.55)
	}),
	en("recent", `\bi\s+(just|recently|finally|also\s+recently|just\s+recently)\s+{ADV}(finished|completed|started|began|got|bought|purchased|adopted|reached|hit|met|joined|visited|attended|went\s+to|saw|watched|read|won|lost|beat|upgraded\s+to|switched\s+to|signed\s+up\s+for|moved\s+into|booked|received|graduated\s+from|ran|tried|learned|picked\s+up|became)\s+(.+)$`, func(g []string) (found, bool) {
		adv := "recently "
		if strings.EqualFold(g[1], "finally") {
			adv = "finally "
		}
		return eventEN("The user "+adv+strings.ToLower(strings.Join(strings.Fields(g[2]), " "))+" ", g[3])
	}),
	en("past", `\bi\s+(finished|completed|graduated\s+from|adopted|bought|started|got\s+married|got\s+engaged|earned|passed|met|went\s+to|attended|visited|joined|upgraded\s+to|switched\s+to|signed\s+up\s+for|volunteered\s+at)\s+(.+)$`, func(g []string) (found, bool) {
		return eventEN("The user "+strings.ToLower(strings.Join(strings.Fields(g[1]), " "))+" ", g[2])
	}),
	en("have", `\bi(?:\s+have|'ve\s+got|\s+have\s+got|\s+own|\s+currently\s+have|\s+now\s+have|\s+still\s+have)\s+(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanEN(g[1])
		if !ok || vagueEN(obj) || leansEN(obj) {
			return found{}, false
		}
		w := wordsEN(obj)
		if len(w) < 2 || !(reNumberEN.MatchString(w[0]) || (w[0] == "a" || w[0] == "an") && !notHaveEN[w[1]]) {
			return found{}, false
		}
		return found{content: "The user has " + obj, category: CategoryOther, confidence: 0.55}, true
	}),
	en("habit", `\bi\s+{ADV}(go|play|run|swim|work\s+out|train|practice|practise|attend|take|visit|volunteer|cook|walk|jog|bike|cycle|meditate|do|have|meet|call|teach|study|spend|drink|eat|watch|read|write|wake\s+up|get\s+up)\s+(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanEN(g[2])
		if !ok || !reFrequencyEN.MatchString(obj) || vagueEN(obj) {
			return found{}, false
		}
		return found{content: "The user " + thirdPersonEN(g[1]) + " " + obj, category: CategoryOther, confidence: 0.6}, true
	}),
	en("my-number", `\bmy\s+((?:[a-z'-]+\s+){0,4}?[a-z'-]+)\s+(?:is|are|was)\s+(?:now\s+|currently\s+|about\s+|around\s+|up\s+to\s+)?(.*\d.*)$`, func(g []string) (found, bool) {
		thing := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		for _, x := range strings.Fields(thing) {
			if notNumberSlotEN[x] {
				return found{}, false
			}
		}
		obj, ok := cleanEN(g[2])
		if !ok {
			return found{}, false
		}
		return found{content: "The user's " + rewriteEN(thing) + " is " + obj, category: CategoryOther, confidence: 0.6}, true
	}),
	zh("养了", `我{ADV}(养了|养着|有)((?:[一二两三四五六七八九十几\d]+)(?:只|条|个|位|辆|套|台|本|盆|匹|头)(.+))$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[2])
		if !ok {
			return found{}, false
		}
		return found{content: "用户" + g[1] + obj, category: CategoryOther, confidence: 0.55}, true
	}),
	zh("最近", `我{ADV}(?:刚刚|刚|最近|终于|上周|上个月|昨天|前几天)(买了|开始|完成了|参加了|报名了|读完了|看完了|学会了|考过了|考上了|养了|加入了|换了|去了)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[2])
		if !ok {
			return found{}, false
		}
		return found{content: "用户最近" + g[1] + obj, category: CategoryOther, confidence: 0.55}, true
	}),
	zh("每周", `我{ADV}((?:每天|每周|每个星期|每星期|每个月|每月|每年|每逢|周末|平时|一般)(.+))$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[1])
		if !ok || !longEnough(g[2]) {
			return found{}, false
		}
		return found{content: "用户" + obj, category: CategoryOther, confidence: 0.6}, true
	}),
}

var (
	notOngoingEN = set("thinking", "wondering", "meaning", "trying", "looking", "having", "feeling", "getting", "going",
		"wanting", "hoping", "planning", "considering", "struggling", "dealing", "noticing", "asking", "waiting", "talking",
		"hearing", "seeing", "checking", "searching", "browsing", "dying", "doing", "told", "working", "living", "going",
		"reading", "saying", "telling", "debating", "contemplating", "googling", "researching", "meaning", "needing",
		"putting", "juggling", "stressing", "worrying", "pondering", "brainstorming", "tossing", "keeping", "feeling",
		"missing", "craving", "finding", "making", "coming", "leaning", "eyeing", "playing", "following", "reflecting",
		"weighing", "exploring", "considering", "itching", "dreaming", "loving", "enjoying", "liking", "hating")
	notHaveEN = set("question", "questions", "quick", "idea", "ideas", "problem", "problems", "issue", "issues",
		"feeling", "doubt", "doubts", "concern", "concerns", "favor", "favour", "request", "suggestion", "thought",
		"thoughts", "few", "couple", "bit", "lot", "little", "hard", "good", "great", "bad", "tough", "busy", "long",
		"follow-up", "followup", "similar", "different", "better", "clue", "sense", "chance", "moment", "minute", "second",
		"look", "hunch", "question", "tendency", "habit", "way", "plan", "budget", "deadline", "limited", "lot", "ton",
		"pretty", "very", "really", "specific", "general", "rough", "vague", "strong", "slight", "preference", "point",
		"whole", "new", "blast", "wonderful", "fun", "nice", "lovely", "weird", "strange", "funny", "confession",
		"lots", "feeling", "hard", "difficult", "easier", "harder")
	notNumberSlotEN = set("question", "questions", "concern", "issue", "problem", "point", "guess", "understanding",
		"hope", "worry", "idea", "plan", "answer", "flight", "order", "password", "pin", "phone", "number", "address",
		"email", "e-mail", "zip", "postcode", "code", "account", "card", "ssn", "id", "passport", "license", "licence",
		"appointment", "reservation", "booking", "ticket", "meeting", "call", "interview", "train", "bus", "bill",
		"invoice", "salary", "income", "debt", "loan", "mortgage", "balance", "credit", "bank", "apartment", "room",
		"house", "unit", "suite", "floor", "seat", "gate", "favourite", "favorite", "name", "birthday", "hometown",
		"occupation", "profession", "timezone", "zone", "language", "tongue", "guess", "bet", "take", "reply", "response")
	reNumberEN    = regexp.MustCompile(`^(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|fifty|hundred|several|multiple)$`)
	reFrequencyEN = regexp.MustCompile(`(?i)\b(?:every|each|twice|once\s+a|times\s+a|times\s+per|daily|weekly|monthly|yearly|annually|on\s+(?:mon|tues|wednes|thurs|fri|satur|sun)days|on\s+weekends|weekends|mornings|evenings|every\s+other)\b`)
	notEventEN    = set("back", "home", "it", "to", "around", "into", "here", "there", "off", "up", "done", "used", "over",
		"through", "this", "that", "them", "started", "going", "rid", "lucky", "caught", "stuck", "sick", "tired", "bored",
		"confused", "lost", "a", "an", "the", "some", "my", "their", "at", "from", "for", "online", "in", "on", "with",
		"by", "of", "about", "so", "really", "too", "very", "seriously", "last", "recently", "yesterday", "today",
		"tonight", "earlier", "ago", "once", "twice", "before", "again", "already", "next", "soon", "later")
)

// lifeEN is a broad pattern's object check: concrete, not pointing elsewhere, at most 15 words.
func lifeEN(prefix, obj, category string, confidence float64) (found, bool) {
	o, ok := cleanEN(obj)
	if !ok || vagueEN(o) || len(strings.Fields(o)) > 15 || leansEN(o) {
		return found{}, false
	}
	return found{content: prefix + o, category: category, confidence: confidence}, true
}

// eventEN is "I just finished reading Dune": the object must say what, not only where to or
// how it felt ("I just got back", "I finally got around to it").
func eventEN(prefix, obj string) (found, bool) {
	o, ok := cleanEN(obj)
	if !ok || vagueEN(o) || len(strings.Fields(o)) > 15 || leansEN(o) {
		return found{}, false
	}
	w := wordsEN(o)
	if len(w) == 0 || (notEventEN[w[0]] && !(set("a", "an", "the", "some", "my", "their")[w[0]] && len(w) >= 2)) {
		return found{}, false
	}
	return found{content: prefix + o, category: CategoryOther, confidence: 0.55}, true
}

// thirdPersonEN conjugates a habit verb for "the user": go -> goes, work out -> works out.
func thirdPersonEN(verb string) string {
	f := strings.Fields(strings.ToLower(verb))
	switch f[0] {
	case "go", "do", "watch", "teach":
		f[0] += "es"
	case "have":
		f[0] = "has"
	case "study":
		f[0] = "studies"
	default:
		f[0] += "s"
	}
	return strings.Join(f, " ")
}

// leansEN reports whether an object leans on something said before: "listening to it
// non-stop", "25 titles on it", "learning a lot from her".
func leansEN(obj string) bool {
	for _, x := range wordsEN(obj) {
		if set("it", "this", "them", "these", "those", "her", "him", "his", "she", "he", "there", "here")[x] {
			return true
		}
	}
	return false
}
