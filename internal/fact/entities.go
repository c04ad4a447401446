package fact

import (
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Graph is what an extractor found of the user's graph in a conversation: the entities it
// names, the relations between them, and the names that are another's other name. Names are
// as written, in the conversation's language; [UserName] is the user.
type Graph struct {
	Entities  []Entity
	Relations []Relation
	Aliases   []Alias
}

// Entity is a person, place, organisation, thing or event a conversation names.
type Entity struct {
	Name string
	// Type is person, place, organization, thing or event; "" when the extractor cannot tell.
	Type string
	// Provenance lists the turns that name it, in conversation order; Time is the earliest
	// one's time and Last the latest's.
	Provenance []string
	Time, Last time.Time
}

// Relation is a relation triplet: Subject Relation Object ("user lives_in Lisbon", "Anna
// married_to Tom"). Ended says the relation ended ("I no longer live in Paris"): Object is
// what it held when the relation holds several at once, "" when it holds one (lives_in).
type Relation struct {
	Subject, Relation, Object string
	Ended                     bool
	Provenance                []string
	Time                      time.Time
}

// Alias says that the name Alias is another name of the entity named Of ("Mel" of
// "Melanie"), as the conversation says.
type Alias struct {
	Alias, Of  string
	Provenance []string
	Time       time.Time
}

// UserName is the name that stands for the user in a Relation.
const UserName = "user"

// userNames are the names an LLM may use for the user.
var userNames = map[string]bool{"user": true, "the user": true, "用户": true, "我": true, "me": true, "i": true}

// IsUser reports whether name stands for the user in a relation.
func IsUser(name string) bool { return userNames[strings.ToLower(strings.TrimSpace(name))] }

// NormalizeName folds an entity's name for its id: [Normalize] (case, width, spacing,
// punctuation), and a leading English article dropped ("The Louvre" and "louvre" are one).
func NormalizeName(name string) string {
	n := Normalize(name)
	for _, a := range []string{"the ", "a ", "an "} {
		if rest, ok := strings.CutPrefix(n, a); ok && rest != "" {
			return rest
		}
	}
	return n
}

// EntityID derives an entity's id from its normalised name, scoped to a tenant and a user as
// [ID] is: "ent_" and 32 hex digits. The user's own node is [UserEntityID]. It never fails.
func EntityID(tenant, user, name string) string {
	if IsUser(name) {
		return UserEntityID(tenant, user)
	}
	return "ent_" + digest(tenant, user, "entity\x00"+NormalizeName(name))
}

// UserEntityID is the id of the user's own node in their graph.
func UserEntityID(tenant, user string) string { return "ent_" + digest(tenant, user, "user\x00") }

// EdgeID derives an edge's id from its triple of entity ids (object "" for an edge that ends a
// relation holding one object; ended is set on an ending edge, which never shares the id of
// the edge it ends). It never fails.
func EdgeID(tenant, user, subject, relation, object string, ended bool) string {
	mark := ""
	if ended {
		mark = "\x00ended"
	}
	return "edge_" + digest(tenant, user, "edge\x00"+subject+"\x00"+relation+"\x00"+object+mark)
}

// EdgeKey is the key of an edge, the slot a newer edge of the same key supersedes it in, as a
// fact's key does: "<subject>.<relation>" for a relation that holds one object at a time
// ([Functional]: where the user lives, works, whom they are married to), else
// "<subject>.<relation>.<object>" (the user's sister Anna and sister Beth are two edges; each
// ends on its own).
func EdgeKey(subject, relation, object string) string {
	if Functional(relation) {
		return "edge." + subject + "." + relation
	}
	return "edge." + subject + "." + relation + "." + object
}

// Functional reports whether a relation holds one object at a time for its subject.
func Functional(relation string) bool {
	switch relation {
	case "lives_in", "works_at", "married_to", "partner_of", "hometown", "mother", "father", "studies_at":
		return true
	}
	return false
}

var reRelation = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// NormalizeRelation folds a relation's name to the slug an edge keeps: lower case, spaces and
// hyphens as underscores ("Lives in" → lives_in). It reports false when what is left is not
// an ASCII slug of at most 40 characters starting with a letter.
func NormalizeRelation(r string) (string, bool) {
	s := strings.ToLower(strings.Join(strings.FieldsFunc(r, func(c rune) bool { return unicode.IsSpace(c) || c == '-' }), "_"))
	return s, reRelation.MatchString(s)
}

// GraphRules is the offline graph extractor: what the fact rules saw, as relations (a keyed
// fact about where the user lives or works, their partner, their hometown or a pet), and, in
// the user's own turns, the people they name with their relation to the user ("my sister
// Anna", 我妹妹小美), the names said to be another's ("Melanie, Mel for short", 小美是王美丽的小名)
// and capitalised names ("in Paris", "with Caroline"). Every entity's provenance is every
// turn of the conversation, of any role, that names it. It never fails and is deterministic.
func GraphRules(turns []Turn, facts []Candidate) Graph {
	g := newGraphBuilder(turns)
	for _, c := range facts {
		g.fromFact(c)
	}
	for _, t := range turns {
		if !strings.EqualFold(strings.TrimSpace(t.Role), "user") {
			continue
		}
		g.fromTurn(t)
	}
	return g.result()
}

// graphBuilder collects a conversation's graph.
type graphBuilder struct {
	turns    []Turn
	entities map[string]*Entity // by normalised name
	order    []string
	rels     []Relation
	aliases  []Alias
}

func newGraphBuilder(turns []Turn) *graphBuilder {
	return &graphBuilder{turns: turns, entities: map[string]*Entity{}}
}

// entity records a name (typ may be "").
func (g *graphBuilder) entity(name, typ string) {
	name = strings.TrimSpace(name)
	if name == "" || IsUser(name) {
		return
	}
	n := NormalizeName(name)
	if n == "" {
		return
	}
	if e, ok := g.entities[n]; ok {
		if typeRank(typ) > typeRank(e.Type) {
			e.Type = typ
		}
		return
	}
	g.entities[n] = &Entity{Name: name, Type: typ}
	g.order = append(g.order, n)
}

// typeRank orders types by how much they say.
func typeRank(t string) int {
	switch t {
	case "":
		return 0
	case "thing":
		return 1
	}
	return 2
}

func (g *graphBuilder) relation(subject, rel, object, objType string, ended bool, prov []string) {
	g.entity(subject, "")
	if object != "" {
		g.entity(object, objType)
	}
	g.rels = append(g.rels, Relation{Subject: subject, Relation: rel, Object: object, Ended: ended, Provenance: slices.Clone(prov)})
}

// factRelations read a keyed fact's content (the forms the rules and the prompt write) as a
// relation of the user.
var factRelations = []struct {
	key   string // the fact's key, or its prefix when it ends with "."
	re    *regexp.Regexp
	rel   string
	typ   string
	ended bool
}{
	{"user.city", regexp.MustCompile(`^The user lives in (.+?)(?:, having moved from .+)?$`), "lives_in", "place", false},
	{"user.city", regexp.MustCompile(`^The user no longer lives in (.+)$`), "lives_in", "place", true},
	{"user.city", regexp.MustCompile(`^用户住在(.+?)(?:（从.+搬来）)?$`), "lives_in", "place", false},
	{"user.city", regexp.MustCompile(`^用户不再住在(.+)$`), "lives_in", "place", true},
	{"user.employer", regexp.MustCompile(`^The user works at (.+?)(?:, having left .+)?$`), "works_at", "organization", false},
	{"user.employer", regexp.MustCompile(`^The user (?:no longer works at|retired from) (.+)$`), "works_at", "organization", true},
	{"user.employer", regexp.MustCompile(`^The user (?:left their job|lost their job|is unemployed|is retired)()$`), "works_at", "organization", true},
	{"user.employer", regexp.MustCompile(`^用户在(.+?)工作(?:（从.+跳槽）)?$`), "works_at", "organization", false},
	{"user.employer", regexp.MustCompile(`^用户(?:从|不再在)(.+?)(?:离职|退休|工作)了?$`), "works_at", "organization", true},
	{"user.hometown", regexp.MustCompile(`^The user is from (.+)$`), "hometown", "place", false},
	{"user.hometown", regexp.MustCompile(`^用户来自(.+)$`), "hometown", "place", false},
	{"user.relationship", regexp.MustCompile(`^The user (?:married|is married to|is engaged to) ([A-Z].*)$`), "married_to", "person", false},
	{"user.relationship", regexp.MustCompile(`^The user (?:divorced|broke up with|separated from|is no longer with) ([A-Z].*)$`), "married_to", "person", true},
	{"user.pet.", regexp.MustCompile(`^The user's (?:dog|cat|rabbit|bird|parrot|hamster|fish|turtle|horse|pet)s? ([A-Z]\w+) (?:passed away|died|ran away|went missing|got lost|was rehomed)$`), "has_pet", "thing", true},
	{"user.pet.", regexp.MustCompile(`\b(?:named|called) ([A-Z]\w+)`), "has_pet", "thing", false},
}

// fromFact reads a keyed fact as a relation of the user.
func (g *graphBuilder) fromFact(c Candidate) {
	if c.Key == "" {
		return
	}
	for _, fr := range factRelations {
		if fr.key != c.Key && !(strings.HasSuffix(fr.key, ".") && strings.HasPrefix(c.Key, fr.key)) {
			continue
		}
		m := fr.re.FindStringSubmatch(c.Content)
		if m == nil {
			continue
		}
		obj := strings.TrimSpace(strings.TrimRight(m[1], ".。"))
		if obj == "" && !fr.ended {
			continue
		}
		if fr.ended && Functional(fr.rel) {
			obj = "" // ends whatever held
		}
		g.relation(UserName, fr.rel, obj, fr.typ, fr.ended, c.Provenance)
		if fr.ended && obj == "" && m[1] != "" {
			g.entity(strings.TrimSpace(m[1]), fr.typ) // still a place or an employer the user named
		}
		return
	}
}

// kinEN maps the words for the people a user names ("my sister Anna") to relations of the user.
var kinEN = map[string]string{
	"sister": "sister", "brother": "brother", "mom": "mother", "mum": "mother", "mother": "mother",
	"dad": "father", "father": "father", "wife": "married_to", "husband": "married_to",
	"partner": "partner_of", "boyfriend": "partner_of", "girlfriend": "partner_of", "fiance": "partner_of",
	"fiancee": "partner_of", "friend": "friend", "best friend": "friend", "boss": "boss", "manager": "boss",
	"colleague": "colleague", "coworker": "colleague", "co-worker": "colleague", "son": "son",
	"daughter": "daughter", "cousin": "cousin", "aunt": "aunt", "uncle": "uncle", "grandma": "grandmother",
	"grandmother": "grandmother", "grandpa": "grandfather", "grandfather": "grandfather",
	"roommate": "roommate", "neighbor": "neighbor", "neighbour": "neighbor", "niece": "niece",
	"nephew": "nephew", "teacher": "teacher", "mentor": "mentor", "dog": "has_pet", "cat": "has_pet",
	"puppy": "has_pet", "kitten": "has_pet", "rabbit": "has_pet", "parrot": "has_pet", "hamster": "has_pet",
}

// kinZH is kinEN for Chinese.
var kinZH = map[string]string{
	"妹妹": "sister", "姐姐": "sister", "哥哥": "brother", "弟弟": "brother", "妈妈": "mother", "母亲": "mother",
	"爸爸": "father", "父亲": "father", "老婆": "married_to", "妻子": "married_to", "太太": "married_to",
	"老公": "married_to", "丈夫": "married_to", "先生": "married_to", "男朋友": "partner_of", "女朋友": "partner_of",
	"朋友": "friend", "好朋友": "friend", "闺蜜": "friend", "老板": "boss", "领导": "boss", "同事": "colleague",
	"儿子": "son", "女儿": "daughter", "表姐": "cousin", "表妹": "cousin", "表哥": "cousin", "表弟": "cousin",
	"室友": "roommate", "邻居": "neighbor", "老师": "teacher", "狗": "has_pet", "猫": "has_pet", "小狗": "has_pet",
	"小猫": "has_pet", "狗狗": "has_pet", "猫咪": "has_pet",
}

var (
	kinWordsEN = func() string {
		var ws []string
		for w := range kinEN {
			ws = append(ws, regexp.QuoteMeta(w))
		}
		slices.SortFunc(ws, func(a, b string) int { return len(b) - len(a) }) // longest first
		return strings.Join(ws, "|")
	}()
	kinWordsZH = func() string {
		var ws []string
		for w := range kinZH {
			ws = append(ws, regexp.QuoteMeta(w))
		}
		slices.SortFunc(ws, func(a, b string) int { return len(b) - len(a) })
		return strings.Join(ws, "|")
	}()
	// "my sister Anna", "my best friend, Mel", "my dog named Max", "my wife is called Sarah".
	reKinEN = regexp.MustCompile(`(?i:\bmy\s+(?:(?:older|younger|little|big|baby|twin|new|old|dear|late)\s+)?(` + kinWordsEN + `)s?)(?:,\s*|\s+(?:(?i:named|called|is\s+called|is\s+named|whose\s+name\s+is)\s+)?)([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b`)
	// "Anna married Tom", "Anna is married to Tom", 小美和小刚结婚了.
	reMarriedEN = regexp.MustCompile(`\b([A-Z][a-z]+)\s+(?:(?:just|recently|finally)\s+)?(?:married|is\s+married\s+to|got\s+married\s+to|is\s+engaged\s+to|got\s+engaged\s+to)\s+([A-Z][a-z]+)\b`)
	reMarriedZH = regexp.MustCompile(`([\p{Han}]{2,3})和([\p{Han}]{2,3}?)(?:结婚了|结婚|订婚了)`)
	// 我妹妹小美, 我的朋友王芳, 我老婆叫李娜.
	reKinZH = regexp.MustCompile(`我(?:的)?(?:亲)?(` + kinWordsZH + `)(?:叫|名叫|名字叫)?([\p{Han}]{2,4})`)
	// "Melanie, Mel for short", "Melanie (Mel)", "Melanie, who goes by Mel", "Mel is short for Melanie".
	reAliasEN = []*regexp.Regexp{
		regexp.MustCompile(`\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s*(?:,\s*|\()(?:(?i:aka|a\.k\.a\.|also\s+known\s+as|who\s+goes\s+by|or\s+just|nicknamed|called))\s+"?([A-Z][a-z]+)"?`),
		regexp.MustCompile(`\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s*(?:,\s*|\()"?([A-Z][a-z]+)"?\s+for\s+short\b`),
		regexp.MustCompile(`\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s+\(([A-Z][a-z]+)\)`),
	}
	reAliasRevEN = regexp.MustCompile(`\b([A-Z][a-z]+)\s+is\s+(?:short|a\s+nickname)\s+for\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b`)
	// 小美是王美丽的小名 / 王美丽，小名小美 / 王美丽（小美）.
	reAliasZH    = regexp.MustCompile(`([\p{Han}]{2,4})[，,（(]\s*(?:小名|昵称|外号|也叫|又叫)?([\p{Han}]{2,3})[）)]?`)
	reAliasRevZH = regexp.MustCompile(`([\p{Han}]{2,3})是([\p{Han}]{2,4}?)的(?:小名|昵称|外号)`)
	reAliasOfZH  = regexp.MustCompile(`([\p{Han}]{2,4}?)(?:的)?(?:小名|昵称|外号)(?:是|叫)([\p{Han}]{2,3})`)
	// A capitalised run of one to three words, after a word that says what it is.
	reNamedEN = regexp.MustCompile(`\b(in|to|from|near|visit|visited|visiting|at|for|with|and|met|married|called|named|about|see|saw|love|like)\s+(?:the\s+)?((?:[A-Z][a-z]+|[A-Z]{2,})(?:\s+(?:[A-Z][a-z]+|[A-Z]{2,}|of|de|van|von)){0,2})\b`)
)

// notNames are capitalised words that name nothing a graph keeps.
var notNames = map[string]bool{
	"i": true, "i'm": true, "ok": true, "okay": true, "monday": true, "tuesday": true, "wednesday": true,
	"thursday": true, "friday": true, "saturday": true, "sunday": true, "january": true, "february": true,
	"march": true, "april": true, "may": true, "june": true, "july": true, "august": true, "september": true,
	"october": true, "november": true, "december": true, "english": true, "chinese": true, "the": true,
	"christmas": true, "thanksgiving": true, "easter": true, "ai": true, "thanks": true, "thank": true,
	"hi": true, "hey": true, "hello": true, "yes": true, "no": true, "please": true, "sorry": true,
}

// zhNameStop are characters that end a Chinese name when they follow its first two: "小美喜欢",
// "王芳是", "小红在".
const zhNameStop = "是在和也很最喜叫去要会说的了今昨明每刚已就都还又住有给把被跟对从上下来到做吃买看开让带"

// personZH cuts a Chinese name out of the run of Han characters that follows a kin word.
func personZH(run string) string {
	rs := []rune(run)
	if len(rs) < 2 {
		return ""
	}
	for _, r := range rs[:2] {
		if strings.ContainsRune(zhNameStop, r) {
			return ""
		}
	}
	n := 2
	for n < len(rs) && n < 3 && !strings.ContainsRune(zhNameStop, rs[n]) {
		n++
	}
	return string(rs[:n])
}

// fromTurn reads the people, aliases and names of one user turn.
func (g *graphBuilder) fromTurn(t Turn) {
	prov := []string{t.ID}
	// Cheap tests first: most turns hold none of the words the patterns need.
	lower := strings.ToLower(t.Content)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(lower, w) {
				return true
			}
		}
		return false
	}
	han := strings.IndexFunc(t.Content, isCJK) >= 0
	if has("my ") {
		g.kinEN(t.Content, prov)
	}
	if han && strings.Contains(t.Content, "我") {
		g.kinZH(t.Content, prov)
	}
	if has("married", "engaged") {
		for _, m := range reMarriedEN.FindAllStringSubmatch(t.Content, -1) {
			if !notNames[strings.ToLower(m[1])] && !notNames[strings.ToLower(m[2])] {
				g.relation(m[1], "married_to", m[2], "person", false, prov)
				g.entity(m[1], "person")
			}
		}
	}
	if han && has("结婚", "订婚") {
		for _, m := range reMarriedZH.FindAllStringSubmatch(t.Content, -1) {
			a := g.knownZH(strings.TrimPrefix(m[1], "我"))
			if a != "" && !strings.ContainsRune(a, '我') && !strings.ContainsRune(a, '们') {
				g.relation(a, "married_to", m[2], "person", false, prov)
				g.entity(a, "person")
			}
		}
	}
	if has("(", "for short", "aka", "a.k.a.", "known as", "goes by", "or just", "nicknamed", "called") {
		for _, re := range reAliasEN {
			for _, m := range re.FindAllStringSubmatch(t.Content, -1) {
				if !notNames[strings.ToLower(m[2])] && !notNames[strings.ToLower(m[1])] {
					g.alias(m[2], m[1], prov)
				}
			}
		}
	}
	if has("short for", "nickname for") {
		for _, m := range reAliasRevEN.FindAllStringSubmatch(t.Content, -1) {
			g.alias(m[1], m[2], prov)
		}
	}
	if han && has("小名", "昵称", "外号", "也叫", "又叫", "（", "(") {
		g.aliasesZH(t.Content, prov)
	}
	if innerCapital(t.Content) {
		g.namedEN(t.Content)
	}
}

// innerCapital reports whether text has a capitalised word after its first that is not "I":
// what a name after a cue word needs.
func innerCapital(text string) bool {
	for i := 1; i < len(text); i++ {
		c := text[i]
		if c < 'A' || c > 'Z' || (text[i-1] != ' ' && text[i-1] != '\n' && text[i-1] != '\t') {
			continue
		}
		if c == 'I' && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\'') {
			continue
		}
		return true
	}
	return false
}

// kinEN reads "my sister Anna".
func (g *graphBuilder) kinEN(text string, prov []string) {
	for _, m := range reKinEN.FindAllStringSubmatch(text, -1) {
		kin := strings.ToLower(m[1])
		rel := kinEN[kin]
		typ := "person"
		if rel == "has_pet" {
			typ = "thing"
		}
		name := m[2]
		if notNames[strings.ToLower(strings.Fields(name)[0])] {
			continue
		}
		g.relation(UserName, rel, name, typ, false, prov)
	}
}

// kinZH reads 我妹妹小美.
func (g *graphBuilder) kinZH(text string, prov []string) {
	for _, m := range reKinZH.FindAllStringSubmatch(text, -1) {
		rel := kinZH[m[1]]
		name := personZH(m[2])
		if name == "" {
			continue
		}
		typ := "person"
		if rel == "has_pet" {
			typ = "thing"
		}
		g.relation(UserName, rel, name, typ, false, prov)
	}
}

// aliasesZH reads 小美是王美丽的小名, 王美丽的小名叫小美, 王美丽（小美）.
func (g *graphBuilder) aliasesZH(text string, prov []string) {
	for _, m := range reAliasRevZH.FindAllStringSubmatch(text, -1) {
		g.alias(m[1], strings.TrimPrefix(m[2], "我"), prov)
	}
	for _, m := range reAliasOfZH.FindAllStringSubmatch(text, -1) {
		g.alias(m[2], strings.TrimPrefix(m[1], "我"), prov)
	}
	for _, m := range reAliasZH.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[0], "小名") || strings.Contains(m[0], "昵称") || strings.Contains(m[0], "外号") ||
			strings.Contains(m[0], "（") || strings.Contains(m[0], "(") {
			if of := g.knownZH(m[1]); of != "" {
				g.alias(m[2], of, prov)
			}
		}
	}
}

// namedEN reads a capitalised name after a word that says what it is: "in Paris", "with Caroline".
func (g *graphBuilder) namedEN(text string) {
	for _, m := range reNamedEN.FindAllStringSubmatchIndex(text, -1) {
		word := strings.ToLower(text[m[2]:m[3]])
		name := strings.TrimSpace(text[m[4]:m[5]])
		words := strings.Fields(name)
		for len(words) > 0 && (notNames[strings.ToLower(words[len(words)-1])] || words[len(words)-1] == "of" || words[len(words)-1] == "de") {
			words = words[:len(words)-1]
		}
		if len(words) == 0 || notNames[strings.ToLower(words[0])] {
			continue
		}
		typ := ""
		switch word {
		case "in", "to", "from", "near", "visit", "visited", "visiting":
			typ = "place"
		case "with", "met", "married":
			typ = "person"
		}
		g.entity(strings.Join(words, " "), typ)
	}
}

// knownZH returns the name among those found so far that ends the run s ("我妹妹王美丽" →
// 王美丽), or s itself when it is a name of two to four characters.
func (g *graphBuilder) knownZH(s string) string {
	for _, n := range g.order {
		if e := g.entities[n]; strings.HasSuffix(s, e.Name) && utf8.RuneCountInString(e.Name) >= 2 {
			return e.Name
		}
	}
	if c := utf8.RuneCountInString(s); c >= 2 && c <= 4 {
		return s
	}
	return ""
}

func (g *graphBuilder) alias(alias, of string, prov []string) {
	alias, of = strings.TrimSpace(alias), strings.TrimSpace(of)
	if alias == "" || of == "" || NormalizeName(alias) == NormalizeName(of) {
		return
	}
	g.entity(of, "")
	g.entity(alias, "")
	g.aliases = append(g.aliases, Alias{Alias: alias, Of: of, Provenance: slices.Clone(prov)})
}

// result gives every entity its provenance (every turn that names it or one of its aliases)
// and times, and every relation and alias its time.
func (g *graphBuilder) result() Graph {
	var out Graph
	times := map[string]time.Time{}
	pos := map[string]int{}
	for i, t := range g.turns {
		if _, ok := pos[t.ID]; !ok {
			times[t.ID], pos[t.ID] = t.Time, i
		}
	}
	earliest := func(prov []string) time.Time {
		var at time.Time
		for _, id := range prov {
			if t := times[id]; !t.IsZero() && (at.IsZero() || t.Before(at)) {
				at = t
			}
		}
		return at
	}
	for _, n := range g.order {
		e := *g.entities[n]
		for _, t := range g.turns {
			if Mentions(t.Content, e.Name) && !slices.Contains(e.Provenance, t.ID) {
				e.Provenance = append(e.Provenance, t.ID)
			}
		}
		for _, r := range g.rels {
			if NormalizeName(r.Object) == n || NormalizeName(r.Subject) == n {
				e.Provenance = append(e.Provenance, r.Provenance...)
			}
		}
		for _, a := range g.aliases {
			if NormalizeName(a.Of) == n || NormalizeName(a.Alias) == n {
				e.Provenance = append(e.Provenance, a.Provenance...)
			}
		}
		slices.SortStableFunc(e.Provenance, func(a, b string) int { return pos[a] - pos[b] })
		e.Provenance = slices.Compact(e.Provenance)
		if len(e.Provenance) == 0 {
			continue
		}
		e.Time = earliest(e.Provenance)
		for _, id := range e.Provenance {
			if t := times[id]; t.After(e.Last) {
				e.Last = t
			}
		}
		out.Entities = append(out.Entities, e)
	}
	// A relation said to end in a turn is not also said to hold by it ("my dog Max passed away").
	endedIn := map[string]bool{}
	for _, r := range g.rels {
		if r.Ended {
			for _, p := range r.Provenance {
				endedIn[r.Subject+"\x00"+r.Relation+"\x00"+NormalizeName(r.Object)+"\x00"+p] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range g.rels {
		if !r.Ended {
			r.Provenance = slices.DeleteFunc(slices.Clone(r.Provenance), func(p string) bool {
				return endedIn[r.Subject+"\x00"+r.Relation+"\x00"+NormalizeName(r.Object)+"\x00"+p]
			})
			if len(r.Provenance) == 0 {
				continue
			}
		}
		k := r.Subject + "\x00" + r.Relation + "\x00" + NormalizeName(r.Object) + "\x00" + boolKey(r.Ended)
		if seen[k] {
			for i := range out.Relations {
				o := &out.Relations[i]
				if o.Subject == r.Subject && o.Relation == r.Relation && NormalizeName(o.Object) == NormalizeName(r.Object) && o.Ended == r.Ended {
					o.Provenance = append(o.Provenance, r.Provenance...)
					o.Time = earliest(o.Provenance)
				}
			}
			continue
		}
		seen[k] = true
		r.Time = earliest(r.Provenance)
		out.Relations = append(out.Relations, r)
	}
	for _, a := range g.aliases {
		a.Time = earliest(a.Provenance)
		out.Aliases = append(out.Aliases, a)
	}
	return out
}

func boolKey(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Mentions reports whether text names name: as a whole word, case folded, for a Latin name
// ("Mel" is not in "Melanie"); anywhere for a name in Han or another script without spaces.
func Mentions(text, name string) bool {
	name = strings.TrimSpace(name)
	if name == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(name)
	if isCJK(r) {
		return strings.Contains(text, name)
	}
	lt, ln := strings.ToLower(text), strings.ToLower(name)
	for from := 0; ; {
		i := strings.Index(lt[from:], ln)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(lt[:i])
		after, _ := utf8.DecodeRuneInString(lt[i+len(ln):])
		if !wordRune(before) && !wordRune(after) {
			return true
		}
		from = i + len(ln)
	}
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// RelationWords are the words that name a relation in a question about it, English and
// Chinese: "sister" and 妹妹, 姐姐 for sister; "wife", "husband", 老婆 … for married_to. The
// relation's own words come first ("lives_in": lives). It never fails.
func RelationWords(relation string) []string {
	var out []string
	for _, w := range strings.Split(relation, "_") {
		if len(w) > 2 && w != "has" && w != "with" {
			out = append(out, w)
		}
	}
	add := func(m map[string]string) {
		var ws []string
		for w, r := range m {
			if r == relation && !slices.Contains(out, w) {
				ws = append(ws, w)
			}
		}
		slices.Sort(ws)
		out = append(out, ws...)
	}
	add(kinEN)
	add(kinZH)
	return out
}
