package fact

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Changes of fact. A fact that changes is stated again with the same key, and the long-term
// store lets the newer statement supersede the older one (kept in the history). What matters
// for a change is therefore that every way of saying it yields the key of the fact it changes,
// and a content that states what holds now:
//
//	"I moved from Paris to Lisbon."        The user lives in Lisbon, having moved from Paris   user.city
//	"I no longer live in Paris."           The user no longer lives in Paris                   user.city
//	"I left Acme and joined Globex."       The user works at Globex                            user.employer
//	"I'm not vegetarian anymore."          The user is no longer vegetarian                    user.diet
//	"I switched from Vim to Neovim."       The user switched from Vim to Neovim                user.editor
//	"I got divorced."                      The user is divorced                                user.relationship
//	"My dog Max passed away."              The user's dog Max passed away                      user.pet.dog
//	我上个月从北京搬到了上海。               用户住在上海（从北京搬来）                              user.city
//
// An ending ("no longer …") is a fact of its own under the key: it supersedes the value it ends
// and answers "where do I live?" truthfully. The keys of changing things (see changeKeys) are the
// same in the LLM prompt, so the two extractors supersede each other's facts.
//
// The rules below are tried before the others (allRules): among matches at the same place of a
// clause the first listed wins, and a rule that declines (a "moved to" that names no place of
// its kind) leaves the clause to the next.

// The keys of the things that change, beyond user.city and user.employer.
const (
	keyDiet         = "user.diet"
	keyRelationship = "user.relationship"
	keyPetPrefix    = "user.pet."
)

// toolKeys maps a technology class (techClass) to the key of the user's own choice of it: the
// language they code in, their editor, operating system, browser, database, framework.
var toolKeys = map[string]string{
	"language": "user.programming_language", "editor": "user.editor", "os": "user.os", "browser": "user.browser",
	"database": "user.database", "framework": "user.framework", "queue": "user.queue",
}

// personsEN is who may say what happened to the user's household: "we moved", "my wife and I
// moved".
const personsEN = `(?:i|we|my\s+(?:family|wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|kids|parents)\s+and\s+i)`

// petsEN maps the words for pets to the kind that keys them.
var petsEN = map[string]string{
	"dog": "dog", "dogs": "dog", "puppy": "dog", "puppies": "dog", "pup": "dog", "doggo": "dog",
	"cat": "cat", "cats": "cat", "kitten": "cat", "kittens": "cat", "kitty": "cat",
	"rabbit": "rabbit", "rabbits": "rabbit", "bunny": "rabbit", "hamster": "hamster", "hamsters": "hamster",
	"guinea pig": "guinea_pig", "parrot": "bird", "bird": "bird", "birds": "bird", "budgie": "bird",
	"fish": "fish", "goldfish": "fish", "turtle": "turtle", "tortoise": "turtle", "horse": "horse",
	"snake": "snake", "lizard": "lizard", "gecko": "lizard", "ferret": "ferret", "chinchilla": "chinchilla",
}

const petWordsEN = `(?:dogs?|pupp(?:y|ies)|pup|doggo|cats?|kittens?|kitty|rabbits?|bunny|hamsters?|guinea\s+pig|parrot|birds?|budgie|fish|goldfish|turtle|tortoise|horse|snake|lizard|gecko|ferret|chinchilla)`

// petTailEN is what may follow a pet ("a cat named Luna", "a puppy last week"), so that "a cat
// toy" is not a pet.
const petTailEN = `(?:\s+(?:named|called|from|last|this|yesterday|recently|at|in|who|which|that|and|for|today|earlier|back|over|on|with|together)\b.*)?`

// dietsEN maps a diet word to how the user's diet is said.
var dietsEN = map[string]string{
	"vegetarian": "is vegetarian", "vegan": "is vegan", "pescatarian": "is pescatarian",
	"plant-based": "eats a plant-based diet", "plant based": "eats a plant-based diet",
	"keto": "is on a keto diet", "paleo": "is on a paleo diet", "carnivore": "is on a carnivore diet",
	"low-carb": "is on a low-carb diet", "low carb": "is on a low-carb diet", "mediterranean": "is on a Mediterranean diet",
	"whole30": "is on the Whole30 diet", "gluten-free": "is on a gluten-free diet", "gluten free": "is on a gluten-free diet",
}

const dietWordsEN = `(vegetarian|vegan|pescatarian|plant[- ]based|keto|paleo|carnivore|low[- ]carb|mediterranean|whole30|gluten[- ]free)`

var changeRulesEN = []rule{
	// Moves: "I moved from Paris to Lisbon", "we relocated to Lisbon from Paris", and the same
	// shapes between tools ("I moved from VS Code to Neovim") and employers ("… from Acme Inc
	// to Globex Corp").
	en("move-from-to", `\b`+personsEN+`(?:'ve|\s+have|\s+had)?\s+{ADV}(?:packed\s+up\s+and\s+)?(moved|relocated|emigrated|switched|migrated|changed|transitioned|went)\s+(?:all\s+the\s+way\s+|over\s+|back\s+)?from\s+(.+?)\s+(?:over\s+|back\s+)?to\s+(.+)$`, func(g []string) (found, bool) {
		return changeFromTo(strings.ToLower(g[1]), g[2], g[3])
	}),
	en("move-to-from", `\b`+personsEN+`(?:'ve|\s+have|\s+had)?\s+{ADV}(?:packed\s+up\s+and\s+)?(moved|relocated|emigrated|switched|migrated)\s+(?:over\s+|back\s+)?to\s+(.+?)\s+from\s+(.+)$`, func(g []string) (found, bool) {
		return changeFromTo(strings.ToLower(g[1]), g[3], g[2])
	}),
	en("left-moved", `\b`+personsEN+`\s+{ADV}left\s+(.+?)\s+(?:and|to)\s+(?:moved|relocated|move|relocate)\s+(?:back\s+)?to\s+(.+)$`, func(g []string) (found, bool) {
		return changeFromTo("moved", g[1], g[2])
	}),
	en("moved-away", `\b`+personsEN+`(?:'ve|\s+have)?\s+{ADV}(?:moved|relocated)\s+(?:away\s+from|out\s+of)\s+(.+)$`, func(g []string) (found, bool) {
		return endedPlaceEN(g[1])
	}),
	// "I switched to Neovim", "we migrated to Postgres": a tool; "I switched to decaf": a
	// preference without a key. "I moved to Berlin" is the older rule's (a place).
	en("switched-to", `\bi(?:'ve|\s+have)?\s+{ADV}(switched|migrated|moved|changed|converted|transitioned|went\s+back)\s+(?:over\s+)?to\s+(.+)$`, func(g []string) (found, bool) {
		verb := strings.ToLower(g[1])
		if name, class := toolOf(g[2]); class != "" {
			return found{content: "The user uses " + name, category: CategoryPreference, key: toolKeys[class], confidence: 0.85}, true
		}
		if verb != "switched" && verb != "converted" {
			return found{}, false
		}
		return simpleEN("The user switched to ", g[2], CategoryPreference, 0.7)
	}),
	en("replaced-with", `\bi(?:'ve|\s+have)?\s+{ADV}(replaced|swapped)\s+(.+?)\s+(?:with|for)\s+(.+)$`, func(g []string) (found, bool) {
		return changeFromTo("switched", g[2], g[3])
	}),
	en("ditched-for", `\bi(?:'ve|\s+have)?\s+{ADV}(?:ditched|dropped|gave\s+up|given\s+up|abandoned|traded|left)\s+(.+?)\s+for\s+(.+)$`, func(g []string) (found, bool) {
		from, fc := toolOf(g[1])
		to, tc := toolOf(g[2])
		if fc == "" || tc == "" {
			return found{}, false
		}
		return found{content: "The user switched from " + from + " to " + to, category: CategoryPreference, key: toolKeys[tc], confidence: 0.85}, true
	}),
	en("no-longer-use", `\bi(?:'ve|\s+have)?\s+(no\s+longer|don't|do\s+not|dont|stopped|quit|gave\s+up|given\s+up)\s+(?:use|using)\s+(.+)$`, func(g []string) (found, bool) {
		name, class := toolOf(trimAnymore(g[2]))
		if class == "" || !changeEN(g[0]) {
			return found{}, false // "I don't use Vim" says nothing changed
		}
		return found{content: "The user no longer uses " + name, category: CategoryPreference, key: toolKeys[class], confidence: 0.85}, true
	}),
	en("use-tool", `\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been|'ve|\s+have)?\s+{ADV}(?:use|using|started\s+using|begun\s+using|began\s+using|picked\s+up|code\s+in|program\s+in|develop\s+in|write\s+(?:code\s+|everything\s+|most\s+things\s+|software\s+)?in|write|code|coding\s+in|programming\s+in|writing)\s+(.+)$`, func(g []string) (found, bool) {
		name, class := toolOf(g[1])
		if class == "" || !toolOnly(g[1], name) {
			return found{}, false
		}
		if class == "language" {
			return found{content: "The user codes in " + name, category: CategoryPreference, key: toolKeys[class], confidence: 0.8}, true
		}
		return found{content: "The user uses " + name, category: CategoryPreference, key: toolKeys[class], confidence: 0.8}, true
	}),
	// Places.
	en("no-longer-live", `\bi(?:\s+|'m\s+|\s+am\s+)(?:no\s+longer|don't|do\s+not|dont|not)\s+(?:live|living|based|residing|reside)\s+(?:in|out\s+of)\s+(.+)$`, func(g []string) (found, bool) {
		if !changeEN(g[0]) {
			// "I don't live in Kolkata" tells where the user is not, not that they moved: a
			// fact without the key, which leaves the user's city alone.
			place, ok := cleanEN(cutAt(g[1], reCutPlaceEN))
			if !ok || !placeLike(place) || vagueEN(place) {
				return found{}, false
			}
			return found{content: "The user does not live in " + place, category: CategoryIdentity, confidence: 0.7}, true
		}
		return endedPlaceEN(g[1])
	}),
	en("we-moved", `\b(?:we|my\s+(?:family|wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|kids|parents)\s+and\s+i)(?:'ve|\s+have)?\s+{ADV}(?:packed\s+up\s+and\s+)?(?:moved|relocated|emigrated)\s+(?:over\s+|back\s+)?to\s+(.+)$`, func(g []string) (found, bool) {
		return placeEN("The user lives in ", g[1], "user.city", CategoryOther, false)
	}),
	en("settled", `\b(?:i|we)(?:'ve|\s+have)?\s+{ADV}settled\s+(?:down\s+)?in\s+(.+)$`, func(g []string) (found, bool) {
		return placeEN("The user lives in ", g[1], "user.city", CategoryOther, false)
	}),
	en("call-home", `\b(?:i|we)\s+{ADV}call\s+(.+?)\s+home\b`, func(g []string) (found, bool) {
		return placeEN("The user lives in ", g[1], "user.city", CategoryOther, false)
	}),
	en("home-is", `\b(?:home|my\s+(?:new\s+)?home)\s+is\s+(?:now\s+)?(?:in\s+)?(.+)$`, func(g []string) (found, bool) {
		return placeEN("The user lives in ", g[1], "user.city", CategoryOther, false)
	}),
	en("new-place", `\b(?:my|our)\s+new\s+(?:place|apartment|flat|house|home)\s+is\s+in\s+(.+)$`, func(g []string) (found, bool) {
		return placeEN("The user lives in ", g[1], "user.city", CategoryOther, false)
	}),
	// Jobs.
	en("left-joined", `\bi\s+{ADV}(?:left|quit)\s+(?:my\s+(?:job|position|role)\s+(?:at|with)\s+)?(.+?)\s+(?:and|to)\s+(?:joined|join|started\s+at|start\s+at|went\s+to|go\s+to|moved\s+to|move\s+to)\s+(.+)$`, func(g []string) (found, bool) {
		from, ok := orgEN(g[1])
		if !ok {
			return found{}, false
		}
		to, ok := orgEN(g[2])
		if !ok {
			return found{}, false
		}
		return found{content: "The user works at " + to + ", having left " + from, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
	}),
	en("left-job", `\bi(?:'ve|\s+have)?\s+{ADV}(quit|left|lost|resigned\s+from|retired\s+from|was\s+laid\s+off\s+(?:from|by)|got\s+laid\s+off\s+(?:from|by)|was\s+let\s+go\s+(?:from|by)|was\s+fired\s+(?:from|by)|got\s+fired\s+(?:from|by))\s+(my\s+(?:job|position|role)(?:\s+(?:at|with)\s+.+)?|.+)$`, func(g []string) (found, bool) {
		verb := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		obj := strings.TrimSpace(g[2])
		lower := strings.ToLower(obj)
		org := ""
		if rest, ok := strings.CutPrefix(lower, "my "); ok {
			f := strings.Fields(rest)
			if len(f) == 0 || !set("job", "position", "role")[strings.Trim(f[0], ".,!")] {
				return found{}, false
			}
			if m := reAtOrgEN.FindStringSubmatch(obj); m != nil {
				org = m[1]
			}
		} else {
			if verb == "left" || verb == "lost" || verb == "quit" && !companyEN(obj) {
				// "I left Paris", "I lost Max", "I quit Facebook": not (surely) an employer.
				return found{}, false
			}
			org = obj
		}
		name := ""
		if org != "" {
			var ok bool
			if name, ok = orgEN(org); !ok {
				return found{}, false
			}
		}
		switch {
		case strings.HasPrefix(verb, "retired"):
			return found{content: "The user retired from " + name, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
		case name != "":
			return found{content: "The user no longer works at " + name, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
		case verb == "lost" || strings.Contains(verb, "laid off") || strings.Contains(verb, "let go") || strings.Contains(verb, "fired"):
			return found{content: "The user lost their job", category: CategoryIdentity, key: "user.employer", confidence: 0.8}, true
		}
		return found{content: "The user left their job", category: CategoryIdentity, key: "user.employer", confidence: 0.8}, true
	}),
	en("laid-off", `\bi(?:\s+was|\s+got|'ve\s+been|\s+have\s+been)\s+{ADV}(laid\s+off|let\s+go|fired)$`, func(g []string) (found, bool) {
		return found{content: "The user lost their job", category: CategoryIdentity, key: "user.employer", confidence: 0.8}, true
	}),
	en("no-longer-work", `\bi(?:'m|\s+am)?\s+(?:no\s+longer|don't|do\s+not|dont|not)\s+(?:work|working)\s+(?:at|for)\s+(.+)$`, func(g []string) (found, bool) {
		name, ok := orgEN(trimAnymore(g[1]))
		if !ok {
			return found{}, false
		}
		if !changeEN(g[0]) {
			return found{content: "The user does not work at " + name, category: CategoryIdentity, confidence: 0.7}, true
		}
		return found{content: "The user no longer works at " + name, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
	}),
	en("new-job", `\bi(?:'ve|\s+have)?\s+{ADV}(?:got|landed|took|accepted|started|began|found|signed)\s+(?:a\s+|an\s+|my\s+)?(?:new\s+|full-time\s+|part-time\s+)?(?:job|position|role|offer|contract)\s+(?:at|with|from)\s+(.+)$`, func(g []string) (found, bool) {
		return worksAtEN(g[1])
	}),
	en("hired", `\bi(?:\s+was|\s+got|'ve\s+been|\s+have\s+been|\s+just\s+got)\s+{ADV}hired\s+(?:at|by)\s+(.+)$`, func(g []string) (found, bool) {
		return worksAtEN(g[1])
	}),
	en("started-at", `\bi(?:'ve|\s+have)?\s+{ADV}(?:started|began)\s+(?:working\s+|work\s+)?at\s+(.+)$`, func(g []string) (found, bool) {
		return worksAtEN(g[1])
	}),
	en("joined-as", `\bi(?:'ve|\s+have)?\s+{ADV}joined\s+(.+?)\s+as\s+(?:an?\s+|their\s+|the\s+)?(.+)$`, func(g []string) (found, bool) {
		return worksAtEN(g[1])
	}),
	en("job-is", `\bmy\s+(?:new\s+)?(?:job|employer|company|workplace)\s+is\s+(?:now\s+)?(?:at\s+|with\s+)?(.+)$`, func(g []string) (found, bool) {
		return worksAtEN(g[1])
	}),
	hinted(en("and-now-work", `^and\s+now\s+(?:i\s+)?(?:work|am\s+working|i'm\s+working)\s+(?:at|for)\s+(.+)$`, func(g []string) (found, bool) {
		return worksAtEN(g[1])
	}), "now"),
	en("unemployed", `\bi(?:'m|\s+am)\s+{ADV}(unemployed|out\s+of\s+work|between\s+jobs|jobless)\b`, func(g []string) (found, bool) {
		return found{content: "The user is unemployed", category: CategoryIdentity, key: "user.employer", confidence: 0.8}, true
	}),
	// Diets.
	en("diet-went", `\bi(?:'ve|\s+have)?\s+{ADV}(?:went|gone|turned|became|become|decided\s+to\s+go|switched\s+to\s+being|started\s+being|am\s+going|'m\s+going)\s+(?:a\s+|fully\s+|completely\s+)?`+dietWordsEN+`\b`, func(g []string) (found, bool) {
		return dietEN(g[1], false)
	}),
	en("diet-not", `\bi(?:'m|\s+am)\s+(?:no\s+longer|not)\s+(?:an?\s+|on\s+(?:a\s+|the\s+)?)?`+dietWordsEN+`\b(?:\s+(?:diet\s+)?(?:anymore|any\s+more|any\s+longer))?`, func(g []string) (found, bool) {
		if !changeEN(g[0]) {
			f, ok := dietEN(g[1], false)
			f.content = strings.Replace(f.content, "The user is ", "The user is not ", 1)
			f.key, f.confidence = "", 0.7 // "I'm not vegan": no change of the user's diet
			return f, ok && strings.Contains(f.content, " not ")
		}
		return dietEN(g[1], true)
	}),
	en("diet-stopped", `\bi(?:'ve|\s+have)?\s+{ADV}(?:stopped|quit|gave\s+up|given\s+up|dropped)\s+(?:being\s+(?:an?\s+)?|doing\s+|the\s+|my\s+)?`+dietWordsEN+`\b`, func(g []string) (found, bool) {
		return dietEN(g[1], true)
	}),
	en("diet-off", `\bi(?:'m|\s+am)\s+{ADV}off\s+(?:the\s+)?`+dietWordsEN+`\b`, func(g []string) (found, bool) {
		return dietEN(g[1], true)
	}),
	en("diet-been", `\bi(?:'ve|\s+have)\s+{ADV}been\s+{ADV}(?:an?\s+|fully\s+|strictly\s+)?`+dietWordsEN+`\b`, func(g []string) (found, bool) {
		return dietEN(g[1], false) // "I've been vegan for three years": a diet that holds
	}),
	en("diet-on", `\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been)?\s+{ADV}(?:on|following|doing|eating|follow|eat|started|began)\s+(?:a\s+|an\s+|the\s+)?(?:strict\s+|mostly\s+)?`+dietWordsEN+`(?:\s+diet)?\b`, func(g []string) (found, bool) {
		return dietEN(g[1], false)
	}),
	en("meat-again", `\bi(?:'ve|\s+have|'m|\s+am)?\s+{ADV}(?:started\s+|began\s+|back\s+to\s+)?eat(?:ing)?\s+(meat|fish|meat\s+and\s+fish)\s+(?:again|now)\b`, func(g []string) (found, bool) {
		return found{content: "The user eats " + strings.ToLower(g[1]) + " again", category: CategoryIdentity, key: keyDiet, confidence: 0.8}, true
	}),
	en("meat-stopped", `\bi(?:'ve|\s+have)?\s+{ADV}(?:stopped|quit|gave\s+up|given\s+up|cut\s+out)\s+(?:eating\s+)?(meat|red\s+meat|animal\s+products)\b`, func(g []string) (found, bool) {
		return found{content: "The user does not eat " + strings.ToLower(strings.Join(strings.Fields(g[1]), " ")), category: CategoryIdentity, key: keyDiet, confidence: 0.8}, true
	}),
	en("meat-no-longer", `\bi\s+(?:no\s+longer|don't|do\s+not|dont)\s+eat\s+(meat|red\s+meat|animal\s+products)\b`, func(g []string) (found, bool) {
		return found{content: "The user does not eat " + strings.ToLower(strings.Join(strings.Fields(g[1]), " ")), category: CategoryIdentity, key: keyDiet, confidence: 0.8}, true
	}),
	// Relationships.
	en("got-married", `\b(?:i|we)(?:'ve|\s+have)?\s+{ADV}(?:got|gotten|just\s+got)\s+(married|engaged|divorced|separated)(?:\s+to\s+(.+))?`, func(g []string) (found, bool) {
		return relationshipEN(strings.ToLower(g[1]), g[2])
	}),
	en("am-married", `\bi(?:'m|\s+am)\s+{ADV}(?:happily\s+|now\s+)?(married|engaged|divorced|separated|single|widowed|in\s+a\s+relationship|seeing\s+someone|dating)(?:\s+(?:to|with|from)?\s*(.+))?$`, func(g []string) (found, bool) {
		return relationshipEN(strings.ToLower(strings.Join(strings.Fields(g[1]), " ")), g[2])
	}),
	en("not-married", `\bi(?:'m|\s+am)\s+(?:not|no\s+longer)\s+(married|engaged|single|dating\s+anyone|seeing\s+anyone|in\s+a\s+relationship)\b(?:\s+(?:anymore|any\s+more|any\s+longer))?`, func(g []string) (found, bool) {
		status := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		if !changeEN(g[0]) {
			return found{content: "The user is not " + status, category: CategoryIdentity, confidence: 0.7}, true
		}
		return found{content: "The user is no longer " + status, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
	}),
	en("married-x", `\bi\s+{ADV}married\s+(.+)$`, func(g []string) (found, bool) {
		return relationshipEN("married", g[1])
	}),
	en("broke-up", `\bi(?:'ve|\s+have)?\s+{ADV}(?:broke|broken|split)\s+up\s+with\s+(.+)$`, func(g []string) (found, bool) {
		who, ok := partnerEN(g[1])
		if !ok {
			return found{}, false
		}
		return found{content: "The user broke up with " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
	}),
	en("x-and-i-broke-up", `\bmy\s+((?:ex-?)?(?:girlfriend|boyfriend|partner|wife|husband|fianc[ée]e?))\s+and\s+i\s+(?:have\s+|just\s+|finally\s+)?(broke\s+up|split\s+up|separated|got\s+divorced|divorced|got\s+married|got\s+engaged)`, func(g []string) (found, bool) {
		who := "their " + strings.ToLower(g[1])
		switch v := strings.ToLower(strings.Join(strings.Fields(g[2]), " ")); v {
		case "got divorced", "divorced":
			return found{content: "The user divorced " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
		case "got married":
			return found{content: "The user married " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
		case "got engaged":
			return found{content: "The user is engaged to " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
		case "separated":
			return found{content: "The user separated from " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
		}
		return found{content: "The user broke up with " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
	}),
	en("partner-left", `\bmy\s+((?:ex-?)?(?:girlfriend|boyfriend|partner|wife|husband|fianc[ée]e?))\s+(?:\S+\s+)?(broke\s+up\s+with\s+me|left\s+me|dumped\s+me|divorced\s+me|split\s+up\s+with\s+me)\b`, func(g []string) (found, bool) {
		who := "their " + strings.ToLower(g[1])
		if strings.HasPrefix(strings.ToLower(g[2]), "divorced") {
			return found{content: "The user divorced " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
		}
		return found{content: "The user broke up with " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
	}),
	en("partner-died", `\bmy\s+(wife|husband|partner|fianc[ée]e?)\s+(?:\S+\s+)?(passed\s+away|died)\b`, func(g []string) (found, bool) {
		return found{content: "The user's " + strings.ToLower(g[1]) + " passed away", category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
	}),
	en("have-partner", `\bi(?:\s+have|'ve\s+got|\s+have\s+got|\s+now\s+have|\s+finally\s+have)\s+(?:a\s+)?(?:new\s+)?(girlfriend|boyfriend|partner|fianc[ée]e?)\b`, func(g []string) (found, bool) {
		return found{content: "The user has a " + strings.ToLower(g[1]), category: CategoryIdentity, key: keyRelationship, confidence: 0.75}, true
	}),
	en("no-longer-with", `\bi(?:'m|\s+am)\s+(?:no\s+longer|not)\s+with\s+(.+?)(?:\s+(?:anymore|any\s+more))?$`, func(g []string) (found, bool) {
		who, ok := partnerEN(trimAnymore(g[1]))
		if !ok || !changeEN(g[0]) {
			return found{}, false
		}
		return found{content: "The user is no longer with " + who, category: CategoryIdentity, key: keyRelationship, confidence: 0.75}, true
	}),
	// Pets.
	en("pet-died", `\b(?:my|our)\s+(?:(?:old|beloved|sweet|little|family|poor|dear)\s+)?(`+petWordsEN+`)(?:\s+(\S+))?\s+(passed\s+away|passed|died|ran\s+away|went\s+missing|got\s+lost|was\s+put\s+down|had\s+to\s+be\s+put\s+down|was\s+rehomed)\b`, func(g []string) (found, bool) {
		kind := petKindEN(g[1])
		name := ""
		if r, _ := utf8.DecodeRuneInString(g[2]); unicode.IsUpper(r) {
			name = " " + strings.Trim(g[2], ",.!") // "my dog Max died"; "my dog just died" names none
		}
		verb := strings.ToLower(strings.Join(strings.Fields(g[3]), " "))
		switch verb {
		case "was put down", "had to be put down":
			verb = "died"
		case "passed":
			verb = "passed away"
		}
		return found{content: "The user's " + strings.ToLower(g[1]) + name + " " + verb, category: CategoryOther, key: keyPetPrefix + kind, confidence: 0.75}, true
	}),
	en("pet-put-down", `\b(?:i|we)\s+(?:had\s+to\s+|have\s+had\s+to\s+)?(?:put|have\s+put)\s+(?:my|our)\s+(`+petWordsEN+`)\s+down\b`, func(g []string) (found, bool) {
		return found{content: "The user's " + strings.ToLower(g[1]) + " died", category: CategoryOther, key: keyPetPrefix + petKindEN(g[1]), confidence: 0.75}, true
	}),
	en("pet-gone", `\b(?:i|we)(?:'ve|\s+have)?\s+{ADV}(rehomed|lost|gave\s+away|gave\s+up)\s+(?:my|our)\s+(`+petWordsEN+`)\b`, func(g []string) (found, bool) {
		verb := strings.ToLower(strings.Join(strings.Fields(g[1]), " "))
		return found{content: "The user " + verb + " their " + strings.ToLower(g[2]), category: CategoryOther, key: keyPetPrefix + petKindEN(g[2]), confidence: 0.75}, true
	}),
	en("pet-gave-away", `\b(?:i|we)\s+{ADV}gave\s+(?:my|our)\s+(`+petWordsEN+`)\s+away\b`, func(g []string) (found, bool) {
		return found{content: "The user gave away their " + strings.ToLower(g[1]), category: CategoryOther, key: keyPetPrefix + petKindEN(g[1]), confidence: 0.75}, true
	}),
	en("pet-none", `\b(?:i|we)\s+(?:no\s+longer|don't|do\s+not|dont)\s+have\s+(?:(?:a|an|any)\s+)?(`+petWordsEN+`)(?:\s+(?:anymore|any\s+more|any\s+longer))?`, func(g []string) (found, bool) {
		kind := petKindEN(g[1])
		if !changeEN(g[0]) {
			return found{}, false // "I don't have a dog": nothing ended
		}
		return found{content: "The user no longer has a " + singularPetEN(g[1]), category: CategoryOther, key: keyPetPrefix + kind, confidence: 0.75}, true
	}),
	en("pet-got", `\b(?:i|we)(?:'ve|\s+have)?\s+{ADV}(adopted|got|bought|rescued|brought\s+home|took\s+in|welcomed)\s+((?:a|an|another|one|two|three|four|a\s+second|a\s+new|two\s+new)\s+(?:[a-z-]+\s+){0,2}?(`+petWordsEN+`)`+petTailEN+`)$`, func(g []string) (found, bool) {
		return petFactEN("The user "+strings.ToLower(strings.Join(strings.Fields(g[1]), " "))+" ", g[2], g[3])
	}),
	en("pet-have", `\b(?:i|we)(?:\s+have|'ve\s+got|\s+have\s+got|\s+own|\s+now\s+have|\s+still\s+have)\s+((?:a|an|one|two|three|four)\s+(?:[a-z-]+\s+){0,2}?(`+petWordsEN+`)`+petTailEN+`)$`, func(g []string) (found, bool) {
		return petFactEN("The user has ", g[1], g[2])
	}),
}

var (
	reAtOrgEN  = regexp.MustCompile(`(?i)\s(?:at|with)\s+(.+)$`)
	reChangeEN = regexp.MustCompile(`(?i)\bno\s+longer\b|\bany\s*more\b|\bany\s+longer\b|\bstopped\b|\bquit\b|\bgave\s+up\b|\bgiven\s+up\b`)
	reChangeZH = regexp.MustCompile(`了|不再|已经|搬离|搬出`)
)

// changeEN reports whether a negation says that something ended ("I no longer live in Paris",
// "I don't use Vim anymore") rather than only what is not so ("I don't live in Kolkata"): only
// an ending supersedes what held.
func changeEN(s string) bool { return reChangeEN.MatchString(s) }

// changeZH is changeEN for Chinese: 我不住北京了, 我不再住在北京, 我已经不在腾讯上班.
func changeZH(s string) bool { return reChangeZH.MatchString(s) }

// hinted sets the hints of a rule whose pattern starts with no literal (a clause's start, ^).
func hinted(r rule, hints ...string) rule {
	r.hints = hints
	return r
}

// changeFromTo builds the fact of a change from one thing to another: between two tools ("Vim"
// to "Neovim"), two employers (names with a company suffix), or two places (moved, relocated,
// emigrated); any other switch ("from coffee to tea") is a preference without a key.
func changeFromTo(verb, from, to string) (found, bool) {
	fname, fc := toolOf(from)
	tname, tc := toolOf(to)
	isMove := verb == "moved" || verb == "relocated" || verb == "emigrated" || verb == "went"
	switch {
	case tc != "" && (fc != "" || !isMove):
		// "moved to Phoenix" is a city; "moved from Python to Go" and "switched to Go" are tools.
		if fc != "" {
			return found{content: "The user switched from " + fname + " to " + tname, category: CategoryPreference, key: toolKeys[tc], confidence: 0.85}, true
		}
		return found{content: "The user uses " + tname, category: CategoryPreference, key: toolKeys[tc], confidence: 0.85}, true
	case companyEN(from) && companyEN(to):
		f, ok1 := orgEN(from)
		t, ok2 := orgEN(to)
		if ok1 && ok2 {
			return found{content: "The user works at " + t + ", having left " + f, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
		}
		return found{}, false
	case isMove:
		src, ok := cleanEN(cutAt(from, reCutPlaceEN))
		dst, ok2 := cleanEN(cutAt(to, reCutPlaceEN))
		if !ok || !ok2 || !placeLike(src) || !placeLike(dst) || vagueEN(src) || vagueEN(dst) {
			return found{}, false
		}
		return found{content: "The user lives in " + dst + ", having moved from " + src, category: CategoryIdentity, key: "user.city", confidence: 0.9}, true
	case verb == "switched" || verb == "changed":
		f, ok1 := cleanEN(from)
		t, ok2 := cleanEN(to)
		if !ok1 || !ok2 || vagueEN(f) || vagueEN(t) || len(strings.Fields(f)) > 4 || len(strings.Fields(t)) > 6 {
			return found{}, false
		}
		return found{content: "The user switched from " + f + " to " + t, category: CategoryPreference, confidence: 0.7}, true
	}
	return found{}, false
}

// endedPlaceEN is "The user no longer lives in X" keyed user.city, for a place X.
func endedPlaceEN(obj string) (found, bool) {
	place, ok := cleanEN(cutAt(trimAnymore(obj), reCutPlaceEN))
	if !ok || !placeLike(place) || vagueEN(place) {
		return found{}, false
	}
	return found{content: "The user no longer lives in " + place, category: CategoryIdentity, key: "user.city", confidence: 0.85}, true
}

var reAnymoreEN = regexp.MustCompile(`(?i)\s+(?:anymore|any\s+more|any\s+longer|now|these\s+days|either)\s*[.!]*$`)

// trimAnymore drops a closing "anymore", "any longer" or "now".
func trimAnymore(s string) string {
	for {
		t := reAnymoreEN.ReplaceAllString(strings.TrimSpace(s), "")
		if t == s {
			return s
		}
		s = t
	}
}

// reCompanyEN is a company's suffix: "Acme Inc", "Globex Corp", "Initech Labs".
var reCompanyEN = regexp.MustCompile(`(?i)\b(?:inc|corp|corporation|co|ltd|llc|gmbh|ag|plc|labs|technologies|tech|systems|software|solutions|group|bank|university|college|hospital|agency|studio|studios|consulting)\.?$`)

// companyEN reports whether obj names a company by its suffix.
func companyEN(obj string) bool {
	o, ok := cleanEN(cutAt(obj, reCutOrgEN))
	return ok && reCompanyEN.MatchString(o)
}

// orgEN returns an employer's name: capitalised (or in a script without case), cut where the
// name ends ("Globex as an engineer", "Globex last month").
func orgEN(obj string) (string, bool) {
	org, ok := cleanEN(cutAt(trimAnymore(obj), reCutOrgEN))
	if !ok || !placeLike(org) || vagueEN(org) || len(strings.Fields(org)) > 5 {
		return "", false
	}
	w := wordsEN(org)
	i := 0
	if len(w) > 1 && w[0] == "the" {
		i = 1
	}
	if notEmployerEN[w[i]] || notNameEN[w[i]] {
		return "", false
	}
	return org, true
}

// worksAtEN is "The user works at X" keyed user.employer.
func worksAtEN(obj string) (found, bool) {
	org, ok := orgEN(obj)
	if !ok {
		return found{}, false
	}
	return found{content: "The user works at " + org, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
}

// toolOf returns the technology an object starts with ("Neovim now" -> "Neovim", "editor")
// as the user wrote it, or "" when it names none.
func toolOf(obj string) (string, string) {
	s := strings.TrimSpace(obj)
	s = strings.TrimLeft(s, "\"'`“")
	class := techClass(s)
	if class == "" {
		return "", ""
	}
	lower := strings.ToLower(s)
	for _, n := range techByLength {
		if strings.HasPrefix(lower, n) && techNames[n] == class {
			return s[:len(n)], class
		}
	}
	return "", ""
}

var reToolRestEN = regexp.MustCompile(`(?i)^(?:\s+(?:now|these\s+days|nowadays|lately|recently|instead|exclusively|only|mostly|every\s*day|daily|full[- ]time|for\s+(?:everything|most\s+things|work|all\s+my\s+\w+)|at\s+work|again|too|as\s+well|anymore|any\s+more))*\s*[.!]*$`)

// toolOnly reports whether an object names nothing but the tool, give or take "now", "for
// everything", "at work": "I use Go now" names the language the user codes in, "I used Go to
// parse a log" does not.
func toolOnly(obj, name string) bool {
	rest := strings.TrimSpace(obj)
	rest = strings.TrimLeft(rest, "\"'`“")
	rest = strings.TrimLeft(rest[len(name):], "\"'`”")
	return reToolRestEN.MatchString(rest)
}

// dietEN is the user's diet, or its end.
func dietEN(word string, ended bool) (found, bool) {
	w := strings.ToLower(strings.Join(strings.Fields(word), " "))
	said, ok := dietsEN[w]
	if !ok {
		return found{}, false
	}
	if ended {
		if rest, isIs := strings.CutPrefix(said, "is "); isIs {
			said = "is no longer " + rest
		} else {
			said = "no longer " + said
		}
	}
	return found{content: "The user " + said, category: CategoryIdentity, key: keyDiet, confidence: 0.85}, true
}

// relationshipEN is the user's relationship status, with whom when the clause names them: "I
// married Sam" and "I'm married to Sam" are "The user is married to Sam".
func relationshipEN(status, who string) (found, bool) {
	status = strings.Join(strings.Fields(status), " ")
	who = strings.TrimSpace(trimAnymore(who))
	if lw := strings.ToLower(who); lw == "again" || lw == "now" || strings.HasPrefix(lw, "again ") || strings.HasPrefix(lw, "now ") {
		who = ""
	}
	for _, p := range []string{"to ", "with ", "from "} {
		if len(who) >= len(p) && strings.EqualFold(who[:len(p)], p) {
			who = who[len(p):]
		}
	}
	content := "The user is " + status
	if who != "" {
		p, ok := partnerEN(who)
		if !ok {
			return found{}, false
		}
		switch status {
		case "married", "engaged":
			content += " to " + p
		case "divorced", "separated":
			content += " from " + p
		case "in a relationship":
			content += " with " + p
		case "dating":
			content += " " + p
		default:
			return found{}, false
		}
	}
	return found{content: content, category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
}

// partnerEN returns whom a relationship names: a capitalised name ("Sam", "Sam Lee") or a
// partner of the user's ("my girlfriend" -> "their girlfriend").
func partnerEN(obj string) (string, bool) {
	o, ok := cleanEN(cutAt(obj, reCutPersonEN))
	if !ok {
		return "", false
	}
	w := wordsEN(o)
	if len(w) == 0 {
		return "", false
	}
	if w[0] == "their" && len(w) <= 3 {
		return o, true
	}
	if !placeLike(o) || vagueEN(o) || len(w) > 3 || notNameEN[w[0]] {
		return "", false
	}
	return o, true
}

// reCutPersonEN is where a person's name ends: "Sam in May", "Sam last year".
var reCutPersonEN = regexp.MustCompile(`(?i)\s+(?:in|on|at|last|this|after|before|since|for|from|and|but|when|who|because|a\s+few|about|around|recently|ago|\d+)\b`)

// reCutTimeEN is where an object's time begins: "a puppy last week".
var reCutTimeEN = regexp.MustCompile(`(?i)\s+(?:last|this|yesterday|today|tonight|recently|earlier|ago|a\s+few|a\s+couple|\d+\s+(?:days?|weeks?|months?|years?))\b`)

// petKindEN is the kind a pet word keys ("puppy" -> "dog").
func petKindEN(word string) string {
	w := strings.ToLower(strings.Join(strings.Fields(word), " "))
	if k, ok := petsEN[w]; ok {
		return k
	}
	return "other"
}

func singularPetEN(word string) string {
	w := strings.ToLower(strings.Join(strings.Fields(word), " "))
	switch {
	case w == "puppies":
		return "puppy"
	case strings.HasSuffix(w, "s") && w != "fish":
		return strings.TrimSuffix(w, "s")
	}
	return w
}

// petFactEN is "The user has a dog named Max" keyed by the pet's kind.
func petFactEN(prefix, obj, pet string) (found, bool) {
	o, ok := cleanEN(cutAt(obj, reCutTimeEN))
	if !ok || leansEN(o) || len(strings.Fields(o)) > 12 {
		return found{}, false
	}
	return found{content: prefix + o, category: CategoryOther, key: keyPetPrefix + petKindEN(pet), confidence: 0.7}, true
}

// petsZH maps the Chinese words for pets to the kind that keys them.
var petsZH = map[string]string{
	"狗": "dog", "狗狗": "dog", "小狗": "dog", "狗子": "dog", "猫": "cat", "猫咪": "cat", "小猫": "cat", "猫猫": "cat",
	"兔子": "rabbit", "小兔子": "rabbit", "仓鼠": "hamster", "鹦鹉": "bird", "小鸟": "bird", "鸟": "bird",
	"金鱼": "fish", "鱼": "fish", "乌龟": "turtle", "龟": "turtle", "马": "horse", "蛇": "snake",
}

const petWordsZH = `(狗狗|小狗|狗子|狗|猫咪|小猫|猫猫|猫|小兔子|兔子|仓鼠|鹦鹉|小鸟|金鱼|乌龟)`

// petInZH returns the kind of the first pet an object names ("一只橘猫" -> "cat"), or "".
func petInZH(obj string) string {
	best, kind := -1, ""
	for w, k := range petsZH {
		if utf8.RuneCountInString(w) == 1 && w != "狗" && w != "猫" {
			continue // 鸟, 鱼, 马, 蛇, 龟 alone are too often something else
		}
		if i := strings.Index(obj, w); i >= 0 && (best < 0 || i < best || i == best && k < kind) {
			best, kind = i, k
		}
	}
	return kind
}

// placeOfZH returns the place an object names (北京, 上海浦东), or "".
func placeOfZH(obj string) string {
	f, ok := placeZH("", obj, "k", "")
	if !ok || f.key == "" {
		return ""
	}
	return f.content
}

// employerZH returns the employer an object names (腾讯, 字节跳动), or "".
func employerZH(obj string) string {
	org, ok := cleanZH(obj)
	if !ok || utf8.RuneCountInString(org) > 20 || strings.ContainsAny(org, "你他她") {
		return ""
	}
	for _, p := range notEmployerZH {
		if strings.HasPrefix(org, p) {
			return ""
		}
	}
	return strings.TrimSpace(org)
}

// toolOnlyZH returns the tool an object names and nothing more (Go, "Neovim了"), or "".
func toolOnlyZH(obj string) (string, string) {
	o, ok := cleanZH(obj)
	if !ok {
		return "", ""
	}
	o = strings.TrimLeft(strings.TrimSpace(o), "\"'`“")
	name, class := toolOf(o)
	if class == "" {
		return "", ""
	}
	rest := strings.TrimSpace(o[len(name):])
	for _, s := range []string{"写代码", "编程", "开发", "写东西", "写程序", "来写代码", "来编程", "来开发", "了"} {
		rest = strings.TrimSuffix(rest, s)
	}
	if rest != "" {
		return "", ""
	}
	return name, class
}

// spacedZH keeps a Latin name apart from the Chinese around it: "用户改用 Go".
func spacedZH(prefix, name string) string {
	if r, _ := utf8.DecodeRuneInString(name); r < utf8.RuneSelf {
		return prefix + " " + name
	}
	return prefix + name
}

var changeRulesZH = []rule{
	// 我上个月从北京搬到了上海 / 我们全家搬去了深圳 -> key user.city.
	zh("从搬到", `(我们|我)(?:和家人|跟家人|全家|一家|一家人)?{ADV}(?:和家人|跟家人|全家|一家)?(?:从(.{1,12}?))?(?:搬到了|搬到|搬去了|搬去|搬家到了|搬家到|搬回了|搬回|迁到了|迁到|移居到了|移居到|移居)(.+)$`, func(g []string) (found, bool) {
		to := placeOfZH(g[3])
		if to == "" {
			if g[2] != "" || g[1] == "我们" {
				return found{}, false
			}
			return placeZH("用户住在", g[3], "user.city", CategoryOther) // 我搬到了一个小镇
		}
		if g[2] != "" {
			if from := placeOfZH(g[2]); from != "" {
				return found{content: "用户住在" + to + "（从" + from + "搬来）", category: CategoryIdentity, key: "user.city", confidence: 0.9}, true
			}
		}
		return found{content: "用户住在" + to, category: CategoryIdentity, key: "user.city", confidence: 0.9}, true
	}),
	// 我不在北京住了 / 我已经不住在北京了 / 我搬离了北京 -> key user.city.
	zh("不住", `我{ADV}(?:已经)?(?:不再住在|不住在|不再住|不住|不在|不再生活在|搬离了|搬离|搬出了|搬出)(.+)$`, func(g []string) (found, bool) {
		obj := strings.TrimSpace(g[1])
		for _, s := range []string{"住了", "生活了", "住", "生活", "了"} {
			obj = strings.TrimSuffix(obj, s)
		}
		if strings.HasSuffix(obj, "工作") || strings.HasSuffix(obj, "上班") {
			return found{}, false
		}
		place := placeOfZH(obj)
		if place == "" || place != strings.TrimSpace(obj) {
			return found{}, false
		}
		if !changeZH(g[0]) {
			return found{content: "用户不住在" + place, category: CategoryIdentity, confidence: 0.7}, true // 我不住北京: no move
		}
		return found{content: "用户不再住在" + place, category: CategoryIdentity, key: "user.city", confidence: 0.85}, true
	}),
	// 我在上海安家了 / 我现在在上海生活 -> key user.city.
	zh("在安家", `我{ADV}在(.{1,12}?)(?:安家|定居|生活|落户|扎根)`, func(g []string) (found, bool) {
		place := placeOfZH(g[1])
		if place == "" {
			return found{}, false
		}
		return found{content: "用户住在" + place, category: CategoryIdentity, key: "user.city", confidence: 0.85}, true
	}),
	// 现在住在杭州 (a clause without its 我: 我们搬家了，现在住在杭州).
	hinted(zh("现在住在", `^(?:现在|目前|如今|眼下)(?:住在|定居在|生活在|人在)(.+)$`, func(g []string) (found, bool) {
		place := placeOfZH(g[1])
		if place == "" {
			return found{}, false
		}
		return found{content: "用户住在" + place, category: CategoryIdentity, key: "user.city", confidence: 0.8}, true
	}), "现在", "目前", "如今", "眼下"),
	// 我从腾讯跳槽到了阿里 / 我跳槽到阿里了 -> key user.employer.
	zh("跳槽", `我{ADV}(?:从(.{1,20}?))?跳槽(?:到了|到|去了|去)(.+)$`, func(g []string) (found, bool) {
		to := employerZH(g[2])
		if to == "" {
			return found{}, false
		}
		if from := employerZH(g[1]); from != "" {
			return found{content: "用户在" + to + "工作（从" + from + "跳槽）", category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
		}
		return found{content: "用户在" + to + "工作", category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
	}),
	// 我入职了字节跳动 / 我去阿里上班了 / 我的新工作在美团 -> key user.employer.
	zh("入职", `我{ADV}(?:入职了|入职|加盟了|正式加入了|加入了)(.+?)(?:公司)?$`, func(g []string) (found, bool) {
		org := employerZH(g[1])
		if org == "" || strings.ContainsAny(org, "群会队组部社") {
			return found{}, false // 加入了羽毛球俱乐部, 加入了读书会
		}
		return found{content: "用户在" + org + "工作", category: CategoryIdentity, key: "user.employer", confidence: 0.8}, true
	}),
	zh("去上班", `我{ADV}(?:去|到)(.{1,20}?)(上班|工作|任职)了`, func(g []string) (found, bool) {
		org := employerZH(g[1])
		if org == "" || strings.ContainsRune("市省县区镇村京海州圳都庆津", lastRune(org)) {
			return found{}, false // 我去上海工作了: a city, not an employer
		}
		return found{content: "用户在" + org + g[2], category: CategoryIdentity, key: "user.employer", confidence: 0.8}, true
	}),
	zh("新工作", `我的新(?:工作|公司|单位)(?:在|是)(.+)$`, func(g []string) (found, bool) {
		org := employerZH(g[1])
		if org == "" {
			return found{}, false
		}
		return found{content: "用户在" + org + "工作", category: CategoryIdentity, key: "user.employer", confidence: 0.8}, true
	}),
	hinted(zh("现在在上班", `^(?:现在|目前|如今)在(.{1,20}?)(上班|工作|任职)`, func(g []string) (found, bool) {
		org := employerZH(g[1])
		if org == "" {
			return found{}, false
		}
		return found{content: "用户在" + org + g[2], category: CategoryIdentity, key: "user.employer", confidence: 0.75}, true
	}), "现在", "目前", "如今"),
	// 我从腾讯离职了 / 我辞职了 / 我被裁员了 / 我退休了 / 我不在腾讯工作了 -> key user.employer.
	zh("离职", `我{ADV}(?:(?:从|在)(.{1,20}?))?(离职|辞职|退休|被裁员|被裁|被辞退|被开除|被炒了|失业)(?:了)?`, func(g []string) (found, bool) {
		verb := g[2]
		if verb == "被裁" {
			verb = "被裁员"
		}
		if verb == "被炒了" {
			verb = "被辞退"
		}
		if g[1] != "" {
			org := employerZH(g[1])
			if org == "" {
				return found{}, false
			}
			if verb == "离职" || verb == "辞职" {
				return found{content: "用户已从" + org + "离职", category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
			}
			return found{content: "用户已从" + org + verb, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
		}
		return found{content: "用户" + verb + "了", category: CategoryIdentity, key: "user.employer", confidence: 0.8}, true
	}),
	zh("不在工作", `我{ADV}(?:已经)?(?:不在|不再在|没在)(.{1,20}?)(上班|工作)了?`, func(g []string) (found, bool) {
		org := employerZH(g[1])
		if org == "" || !changeZH(g[0]) {
			return found{}, false
		}
		return found{content: "用户不再在" + org + g[2], category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
	}),
	// 我开始吃素了 / 我不吃素了 / 我又开始吃肉了 / 我是素食主义者 -> key user.diet.
	zh("吃素", `我{ADV}(?:又|重新)?(开始|不再|不|没再|戒了|戒)?(吃素|吃全素|吃纯素|吃肉|肉)(了)?`, func(g []string) (found, bool) {
		how, what, done := g[1], g[2], g[3] != ""
		switch {
		case what == "肉" && !strings.HasPrefix(how, "戒"):
			return found{}, false
		case strings.HasPrefix(how, "戒"):
			return found{content: "用户不再吃肉", category: CategoryIdentity, key: keyDiet, confidence: 0.8}, true
		case how == "不再" || how == "没再" || how == "不" && done:
			return found{content: "用户不再" + what, category: CategoryIdentity, key: keyDiet, confidence: 0.8}, true
		case how == "不":
			return found{content: "用户不" + what, category: CategoryIdentity, confidence: 0.7}, true // 我不吃素: no change
		case what == "吃肉":
			if how == "" && !done {
				return found{}, false // 我吃肉: says little
			}
			return found{content: "用户又开始吃肉", category: CategoryIdentity, key: keyDiet, confidence: 0.8}, true
		}
		return found{content: "用户" + what, category: CategoryIdentity, key: keyDiet, confidence: 0.8}, true
	}),
	zh("素食者", `我{ADV}(不再是|不是|是)(?:一名|一个|个|一位)?(素食主义者|素食者|纯素食者|严格素食者|素食主义|纯素主义者)`, func(g []string) (found, bool) {
		if g[1] == "是" {
			return found{content: "用户是" + g[2], category: CategoryIdentity, key: keyDiet, confidence: 0.85}, true
		}
		return found{content: "用户不再是" + g[2], category: CategoryIdentity, key: keyDiet, confidence: 0.85}, true
	}),
	zh("饮食", `我{ADV}(?:在|正在|开始|开始了)?(?:吃|做|进行|尝试)?(生酮饮食|低碳饮食|地中海饮食|间歇性断食|轻断食|低碳水饮食)`, func(g []string) (found, bool) {
		return found{content: "用户在进行" + g[1], category: CategoryIdentity, key: keyDiet, confidence: 0.75}, true
	}),
	// 我从Python转到了Go / 我改用Neovim了 / 我不用Vim了 / 我现在主要写Rust -> user.<tool>.
	zh("改用", `我{ADV}(?:从(.{1,20}?))?(?:转到了|转到|转向了|转向|换到了|换到|换成了|换成|改用了|改用|切换到了|切换到|迁移到了|迁移到|转用了|转用)(.+)$`, func(g []string) (found, bool) {
		to, tc := toolOnlyZH(g[2])
		if tc == "" {
			return found{}, false
		}
		if from, fc := toolOnlyZH(g[1]); fc != "" {
			return found{content: spacedZH("用户从", from) + " 改用 " + to, category: CategoryPreference, key: toolKeys[tc], confidence: 0.85}, true
		}
		return found{content: spacedZH("用户改用", to), category: CategoryPreference, key: toolKeys[tc], confidence: 0.85}, true
	}),
	zh("不用", `我{ADV}(?:已经)?(?:不再用|不用|不再使用|不使用|不写|不再写)(.+?)了`, func(g []string) (found, bool) {
		name, class := toolOnlyZH(g[1])
		if class == "" {
			return found{}, false
		}
		return found{content: spacedZH("用户不再用", name), category: CategoryPreference, key: toolKeys[class], confidence: 0.85}, true
	}),
	zh("用工具", `我{ADV}(?:主要|平时|一般|基本)?(?:用|使用|在用|写|都用|只用)(.+)$`, func(g []string) (found, bool) {
		name, class := toolOnlyZH(g[1])
		if class == "" {
			return found{}, false
		}
		if class == "language" {
			return found{content: spacedZH("用户主要写", name), category: CategoryPreference, key: toolKeys[class], confidence: 0.8}, true
		}
		return found{content: spacedZH("用户用", name), category: CategoryPreference, key: toolKeys[class], confidence: 0.8}, true
	}),
	// 我结婚了 / 我和男朋友分手了 / 我有女朋友了 / 我现在单身 -> key user.relationship.
	zh("结婚", `我(?:们)?{ADV}(?:(?:和|跟|与)(.{1,10}?))?(结婚了|离婚了|订婚了|分手了|在一起了|复婚了|脱单了|恋爱了|谈恋爱了)`, func(g []string) (found, bool) {
		verb := g[2]
		who := strings.TrimSpace(g[1])
		if who != "" {
			who = strings.NewReplacer("我的", "用户的", "我", "用户").Replace(who)
			if strings.ContainsAny(who, "你他她它") && !strings.Contains(who, "男朋友") && !strings.Contains(who, "女朋友") {
				return found{}, false
			}
			return found{content: "用户和" + who + strings.TrimSuffix(verb, "了"), category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
		}
		switch verb {
		case "结婚了":
			return found{content: "用户已婚", category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
		case "在一起了":
			return found{}, false
		case "脱单了", "恋爱了", "谈恋爱了":
			return found{content: "用户在谈恋爱", category: CategoryIdentity, key: keyRelationship, confidence: 0.75}, true
		}
		return found{content: "用户" + strings.TrimSuffix(verb, "了"), category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
	}),
	zh("单身", `我{ADV}(?:又)?(?:是)?(单身|已婚|未婚|离异)`, func(g []string) (found, bool) {
		return found{content: "用户" + g[1], category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
	}),
	zh("有对象", `我{ADV}有(男朋友|女朋友|对象|男友|女友|未婚夫|未婚妻)了`, func(g []string) (found, bool) {
		return found{content: "用户有" + g[1], category: CategoryIdentity, key: keyRelationship, confidence: 0.75}, true
	}),
	zh("伴侣去世", `我(?:的)?(老公|老婆|丈夫|妻子|先生|太太|爱人)(?:.{0,6}?)(去世了|过世了|走了|离世了)`, func(g []string) (found, bool) {
		return found{content: "用户的" + g[1] + "去世了", category: CategoryIdentity, key: keyRelationship, confidence: 0.8}, true
	}),
	// 我的狗去世了 / 我把猫送人了 / 我不养狗了 / 我领养了一只狗 -> key user.pet.<kind>.
	zh("宠物没了", `我(?:的|家的|家|们家的|们家)?(?:那只|那条)?`+petWordsZH+`(?:[^，。！？]{0,6}?)(去世了|死了|走了|走丢了|丢了|过世了|没了|离开了)[啊呀哦呢吧]*$`, func(g []string) (found, bool) {
		verb := g[2]
		if verb == "死了" || verb == "过世了" || verb == "没了" || verb == "离开了" {
			verb = "去世了"
		}
		if verb == "丢了" {
			verb = "走丢了"
		}
		return found{content: "用户的" + g[1] + verb, category: CategoryOther, key: keyPetPrefix + petsZH[g[1]], confidence: 0.75}, true
	}),
	zh("宠物送人", `我{ADV}把(?:我的|我家的|家里的|家里)?`+petWordsZH+`(送人了|送走了|送给了.+|卖了)`, func(g []string) (found, bool) {
		return found{content: "用户把" + g[1] + "送走了", category: CategoryOther, key: keyPetPrefix + petsZH[g[1]], confidence: 0.75}, true
	}),
	zh("不养", `我{ADV}(?:已经)?(?:不再养|不养|没有养|没养|没有)`+petWordsZH+`了`, func(g []string) (found, bool) {
		return found{content: "用户不再养" + g[1], category: CategoryOther, key: keyPetPrefix + petsZH[g[1]], confidence: 0.75}, true
	}),
	zh("领养", `我(?:们)?{ADV}(领养了|收养了|捡了|买了|养了|新养了)((?:一|两|三|几)?(?:只|条)(.+))$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[2])
		kind := petInZH(g[2])
		if !ok || kind == "" {
			return found{}, false
		}
		return found{content: "用户" + g[1] + obj, category: CategoryOther, key: keyPetPrefix + kind, confidence: 0.7}, true
	}),
}
