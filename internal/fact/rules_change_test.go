package fact

import (
	"strings"
	"testing"
	"time"
)

// changeCase is a change of fact: before states a value, change states that it changed. Both
// must yield a fact of key, and change the content want, so that the long-term store lets the
// change supersede what before said (the same key, stated later).
type changeCase struct {
	before, change string
	key, want      string
}

var changesEN = []changeCase{
	// Moves.
	{"I live in Paris.", "I moved from Paris to Lisbon.", "user.city", "The user lives in Lisbon, having moved from Paris"},
	{"I live in Paris.", "We relocated to Lisbon last month.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "I relocated to Lisbon.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "I moved to Lisbon.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "I now live in Lisbon.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "I'm based in Lisbon now.", "user.city", "The user is based in Lisbon"},
	{"I live in Paris.", "I no longer live in Paris.", "user.city", "The user no longer lives in Paris"},
	{"I live in Paris.", "I don't live in Paris anymore.", "user.city", "The user no longer lives in Paris"},
	{"I live in Paris.", "I moved out of Paris last year.", "user.city", "The user no longer lives in Paris"},
	{"I live in Paris.", "We moved away from Paris.", "user.city", "The user no longer lives in Paris"},
	{"I live in Paris.", "I left Paris and moved to Lisbon.", "user.city", "The user lives in Lisbon, having moved from Paris"},
	{"I live in Paris.", "My wife and I moved to Lisbon in March.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "We just moved to Lisbon!", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "We've settled in Lisbon.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "I call Lisbon home now.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "Home is Lisbon these days.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "I'm living in Lisbon now.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "I moved to Lisbon from Paris.", "user.city", "The user lives in Lisbon, having moved from Paris"},
	{"I live in Paris.", "I relocated from Paris to Lisbon for work.", "user.city", "The user lives in Lisbon, having moved from Paris"},
	{"I live in Paris.", "I'm no longer based in Paris.", "user.city", "The user no longer lives in Paris"},
	{"I live in Paris.", "Our new apartment is in Lisbon.", "user.city", "The user lives in Lisbon"},
	{"I live in Paris.", "We packed up and moved to Lisbon.", "user.city", "The user lives in Lisbon"},
	{"I'm based in London.", "I moved back to Paris.", "user.city", "The user lives in Paris"},
	// Jobs.
	{"I work at Acme.", "I left Acme and joined Globex.", "user.employer", "The user works at Globex, having left Acme"},
	{"I work at Acme.", "I quit my job at Acme.", "user.employer", "The user no longer works at Acme"},
	{"I work at Acme.", "I left my job at Acme last week.", "user.employer", "The user no longer works at Acme"},
	{"I work at Acme.", "I no longer work at Acme.", "user.employer", "The user no longer works at Acme"},
	{"I work at Acme.", "I don't work for Acme anymore.", "user.employer", "The user no longer works at Acme"},
	{"I work at Acme.", "I got a job at Globex.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I started a new job at Globex.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I just started at Globex.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I joined Globex as a data engineer.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I was hired by Globex in May.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I took a job at Globex.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I accepted an offer from Globex.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I'm now working at Globex.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "My new job is at Globex.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I switched jobs and now work at Globex.", "user.employer", "The user works at Globex"},
	{"I work at Acme.", "I was laid off from Acme.", "user.employer", "The user no longer works at Acme"},
	{"I work at Acme.", "I resigned from Acme.", "user.employer", "The user no longer works at Acme"},
	{"I work at Acme.", "I retired from Acme last year.", "user.employer", "The user retired from Acme"},
	{"I work at Acme.", "I'm retired now.", "user.employer", "The user is retired"},
	{"I work at Acme.", "I'm unemployed at the moment.", "user.employer", "The user is unemployed"},
	{"I work at Acme.", "I lost my job.", "user.employer", "The user lost their job"},
	{"I work at Acme.", "I got laid off.", "user.employer", "The user lost their job"},
	{"I work at Acme.", "I work at Globex now.", "user.employer", "The user works at Globex"},
	{"I work at Acme Inc.", "I moved from Acme Inc to Globex Corp.", "user.employer", "The user works at Globex Corp, having left Acme Inc"},
	// Diets.
	{"I'm vegetarian.", "I went vegan.", "user.diet", "The user is vegan"},
	{"I'm vegetarian.", "I'm not vegetarian anymore.", "user.diet", "The user is no longer vegetarian"},
	{"I'm vegan.", "I'm no longer vegan.", "user.diet", "The user is no longer vegan"},
	{"I'm vegetarian.", "I stopped being vegetarian.", "user.diet", "The user is no longer vegetarian"},
	{"I'm vegetarian.", "I started eating meat again.", "user.diet", "The user eats meat again"},
	{"I'm vegan.", "I eat fish again.", "user.diet", "The user eats fish again"},
	{"I'm a vegetarian.", "I became vegan last year.", "user.diet", "The user is vegan"},
	{"I'm vegan.", "I'm pescatarian now.", "user.diet", "The user is pescatarian"},
	{"I'm vegetarian.", "I'm on a keto diet.", "user.diet", "The user is on a keto diet"},
	{"I'm on a keto diet.", "I quit keto.", "user.diet", "The user is no longer on a keto diet"},
	{"I'm on a keto diet.", "I'm off keto.", "user.diet", "The user is no longer on a keto diet"},
	{"I'm vegetarian.", "I follow a plant-based diet.", "user.diet", "The user eats a plant-based diet"},
	{"I'm on a keto diet.", "I gave up meat.", "user.diet", "The user does not eat meat"},
	{"I'm on a keto diet.", "I stopped eating meat.", "user.diet", "The user does not eat meat"},
	{"I'm on a keto diet.", "I no longer eat meat.", "user.diet", "The user does not eat meat"},
	{"I'm on a keto diet.", "I've been vegan for three years now.", "user.diet", "The user is vegan"},
	// Languages and tools.
	{"I code in Python.", "I switched from Python to Go.", "user.programming_language", "The user switched from Python to Go"},
	{"I code in Python.", "I mostly write Rust these days.", "user.programming_language", "The user codes in Rust"},
	{"I code in Python.", "I program in Go now.", "user.programming_language", "The user codes in Go"},
	{"I code in Python.", "I've been writing Rust lately.", "user.programming_language", "The user codes in Rust"},
	{"I code in Python.", "I've switched to Go.", "user.programming_language", "The user uses Go"},
	{"I code in Python.", "I moved from Python to Kotlin.", "user.programming_language", "The user switched from Python to Kotlin"},
	{"I code in Python.", "I ditched Python for Go.", "user.programming_language", "The user switched from Python to Go"},
	{"I use Vim.", "I've switched to Neovim.", "user.editor", "The user uses Neovim"},
	{"I use Vim.", "I moved from VS Code to Neovim.", "user.editor", "The user switched from VS Code to Neovim"},
	{"I use Vim.", "I no longer use Vim.", "user.editor", "The user no longer uses Vim"},
	{"I use Vim.", "I replaced Vim with Helix.", "user.editor", "The user switched from Vim to Helix"},
	{"I use Vim.", "I use Zed now.", "user.editor", "The user uses Zed"},
	{"I use Windows.", "I don't use Windows anymore.", "user.os", "The user no longer uses Windows"},
	{"I use Windows.", "I now use Linux.", "user.os", "The user uses Linux"},
	{"I use Windows.", "I ditched Windows for Linux.", "user.os", "The user switched from Windows to Linux"},
	{"I use Chrome.", "I stopped using Chrome.", "user.browser", "The user no longer uses Chrome"},
	{"I use Chrome.", "I've started using Firefox.", "user.browser", "The user uses Firefox"},
	{"I use MySQL.", "I migrated from MySQL to PostgreSQL.", "user.database", "The user switched from MySQL to PostgreSQL"},
	// Relationships.
	{"I'm single.", "I got married.", "user.relationship", "The user is married"},
	{"I'm single.", "I married Sam last year.", "user.relationship", "The user is married to Sam"},
	{"I'm single.", "I got engaged to Sam.", "user.relationship", "The user is engaged to Sam"},
	{"I'm single.", "I'm engaged.", "user.relationship", "The user is engaged"},
	{"I'm married.", "I got divorced.", "user.relationship", "The user is divorced"},
	{"I'm married.", "I'm divorced now.", "user.relationship", "The user is divorced"},
	{"I have a girlfriend.", "I broke up with my girlfriend.", "user.relationship", "The user broke up with their girlfriend"},
	{"I have a boyfriend.", "My boyfriend and I broke up.", "user.relationship", "The user broke up with their boyfriend"},
	{"I have a girlfriend.", "My girlfriend broke up with me.", "user.relationship", "The user broke up with their girlfriend"},
	{"I'm married.", "My husband left me.", "user.relationship", "The user broke up with their husband"},
	{"I'm married.", "I'm single again.", "user.relationship", "The user is single"},
	{"I'm single.", "I'm seeing someone.", "user.relationship", "The user is seeing someone"},
	{"I'm single.", "I'm in a relationship with Sam.", "user.relationship", "The user is in a relationship with Sam"},
	{"I'm single.", "I'm dating Sam.", "user.relationship", "The user is dating Sam"},
	{"I'm married.", "I'm separated from my husband.", "user.relationship", "The user is separated from their husband"},
	{"I'm married.", "My wife passed away.", "user.relationship", "The user's wife passed away"},
	{"I'm single.", "I have a girlfriend now.", "user.relationship", "The user has a girlfriend"},
	{"I'm dating Sam.", "I'm no longer with Sam.", "user.relationship", "The user is no longer with Sam"},
	{"I'm single.", "I'm not single anymore.", "user.relationship", "The user is no longer single"},
	// Pets.
	{"I have a dog named Max.", "My dog Max passed away.", "user.pet.dog", "The user's dog Max passed away"},
	{"I have a cat.", "Our cat died last week.", "user.pet.cat", "The user's cat died"},
	{"I have a dog.", "We had to put our dog down.", "user.pet.dog", "The user's dog died"},
	{"I have a cat.", "I rehomed my cat.", "user.pet.cat", "The user rehomed their cat"},
	{"I have a dog.", "I don't have a dog anymore.", "user.pet.dog", "The user no longer has a dog"},
	{"I have two cats.", "I no longer have cats.", "user.pet.cat", "The user no longer has a cat"},
	{"I have a dog.", "I lost my dog.", "user.pet.dog", "The user lost their dog"},
	{"I have a cat.", "I gave my cat away.", "user.pet.cat", "The user gave away their cat"},
	{"I have a cat.", "My cat ran away.", "user.pet.cat", "The user's cat ran away"},
	{"I have a dog.", "My dog just died.", "user.pet.dog", "The user's dog died"},
	{"I have a cat.", "Our cat passed last month.", "user.pet.cat", "The user's cat passed away"},
	{"I have a dog named Max.", "We adopted a second dog named Bella.", "user.pet.dog", "The user adopted a second dog named Bella"},
	{"I had no pets.", "I adopted a cat.", "user.pet.cat", "The user adopted a cat"},
	{"I had no pets.", "I got a puppy last week.", "user.pet.dog", "The user got a puppy"},
	{"I had no pets.", "I have a dog named Max.", "user.pet.dog", "The user has a dog named Max"},
}

var changesZH = []changeCase{
	// 搬家。
	{"我住在北京。", "我上个月从北京搬到了上海。", "user.city", "用户住在上海（从北京搬来）"},
	{"我住在北京。", "我从北京搬到上海了。", "user.city", "用户住在上海（从北京搬来）"},
	{"我住在北京。", "我搬到了上海。", "user.city", "用户住在上海"},
	{"我住在北京。", "我现在住在上海了。", "user.city", "用户住在上海"},
	{"我住在北京。", "我不在北京住了。", "user.city", "用户不再住在北京"},
	{"我住在北京。", "我已经不住在北京了。", "user.city", "用户不再住在北京"},
	{"我住在北京。", "我不住北京了。", "user.city", "用户不再住在北京"},
	{"我住在北京。", "我们搬到了上海。", "user.city", "用户住在上海"},
	{"我住在北京。", "我们全家搬去了深圳。", "user.city", "用户住在深圳"},
	{"我住在北京。", "我定居在上海了。", "user.city", "用户住在上海"},
	{"我住在北京。", "我现在在上海生活。", "user.city", "用户住在上海"},
	{"我住在北京。", "我在上海安家了。", "user.city", "用户住在上海"},
	{"我住在北京。", "我搬回了成都。", "user.city", "用户住在成都"},
	{"我住在北京。", "我搬离了北京。", "user.city", "用户不再住在北京"},
	{"我住在北京。", "我去年搬家到了杭州。", "user.city", "用户住在杭州"},
	{"我住在北京。", "我们搬家了，现在住在杭州。", "user.city", "用户住在杭州"},
	{"我住在北京。", "我和家人移居到了新加坡。", "user.city", "用户住在新加坡"},
	// 工作。
	{"我在腾讯工作。", "我从腾讯跳槽到了阿里。", "user.employer", "用户在阿里工作（从腾讯跳槽）"},
	{"我在腾讯工作。", "我跳槽到阿里了。", "user.employer", "用户在阿里工作"},
	{"我在腾讯工作。", "我去阿里上班了。", "user.employer", "用户在阿里上班"},
	{"我在腾讯工作。", "我入职了字节跳动。", "user.employer", "用户在字节跳动工作"},
	{"我在腾讯工作。", "我从腾讯离职了。", "user.employer", "用户已从腾讯离职"},
	{"我在腾讯工作。", "我离职了。", "user.employer", "用户离职了"},
	{"我在腾讯工作。", "我辞职了。", "user.employer", "用户辞职了"},
	{"我在腾讯工作。", "我被裁员了。", "user.employer", "用户被裁员了"},
	{"我在腾讯工作。", "我现在在阿里工作。", "user.employer", "用户在阿里工作"},
	{"我在腾讯工作。", "我不在腾讯工作了。", "user.employer", "用户不再在腾讯工作"},
	{"我在腾讯工作。", "我已经不在腾讯上班了。", "user.employer", "用户不再在腾讯上班"},
	{"我在腾讯工作。", "我去年退休了。", "user.employer", "用户退休了"},
	{"我在腾讯工作。", "我换工作了，现在在美团上班。", "user.employer", "用户在美团上班"},
	{"我在腾讯工作。", "我的新工作在美团。", "user.employer", "用户在美团工作"},
	{"我在腾讯工作。", "我就职于美团。", "user.employer", "用户就职于美团"},
	// 饮食。
	{"我又开始吃肉了。", "我开始吃素了。", "user.diet", "用户吃素"},
	{"我吃素。", "我不吃素了。", "user.diet", "用户不再吃素"},
	{"我吃素。", "我不再吃肉了。", "user.diet", "用户不再吃肉"},
	{"我又开始吃肉了。", "我是素食主义者。", "user.diet", "用户是素食主义者"},
	{"我是素食主义者。", "我又开始吃肉了。", "user.diet", "用户又开始吃肉"},
	{"我吃素。", "我现在吃纯素。", "user.diet", "用户吃纯素"},
	{"我吃素。", "我不再是素食主义者了。", "user.diet", "用户不再是素食主义者"},
	{"我吃素。", "我戒肉了。", "user.diet", "用户不再吃肉"},
	{"我吃素。", "我开始生酮饮食了。", "user.diet", "用户在进行生酮饮食"},
	// 语言和工具。
	{"我用Python。", "我从Python转到了Go。", "user.programming_language", "用户从 Python 改用 Go"},
	{"我用Python。", "我改用Go了。", "user.programming_language", "用户改用 Go"},
	{"我用Vim。", "我换成了Neovim。", "user.editor", "用户改用 Neovim"},
	{"我用Vim。", "我现在用Neovim。", "user.editor", "用户用 Neovim"},
	{"我用Vim。", "我不用Vim了。", "user.editor", "用户不再用 Vim"},
	{"我用Windows。", "我已经不用Windows了。", "user.os", "用户不再用 Windows"},
	{"我用Python。", "我现在主要写Rust。", "user.programming_language", "用户主要写 Rust"},
	{"我用Python。", "我平时用 Go 写代码。", "user.programming_language", "用户主要写 Go"},
	{"我用VS Code。", "我从VS Code换到了Cursor。", "user.editor", "用户从 VS Code 改用 Cursor"},
	// 感情。
	{"我单身。", "我结婚了。", "user.relationship", "用户已婚"},
	{"我结婚了。", "我离婚了。", "user.relationship", "用户离婚"},
	{"我有男朋友了。", "我和男朋友分手了。", "user.relationship", "用户和男朋友分手"},
	{"我单身。", "我订婚了。", "user.relationship", "用户订婚"},
	{"我单身。", "我有女朋友了。", "user.relationship", "用户有女朋友"},
	{"我单身。", "我脱单了。", "user.relationship", "用户在谈恋爱"},
	{"我结婚了。", "我现在单身。", "user.relationship", "用户单身"},
	{"我单身。", "我跟小美在一起了。", "user.relationship", "用户和小美在一起"},
	{"我结婚了。", "我老公去年去世了。", "user.relationship", "用户的老公去世了"},
	// 宠物。
	{"我养了一只猫。", "我的猫去世了。", "user.pet.cat", "用户的猫去世了"},
	{"我养了一只狗。", "我的狗死了。", "user.pet.dog", "用户的狗去世了"},
	{"我养了一只猫。", "我家的猫走丢了。", "user.pet.cat", "用户的猫走丢了"},
	{"我养了一只狗。", "我把狗送人了。", "user.pet.dog", "用户把狗送走了"},
	{"我养了一只猫。", "我不养猫了。", "user.pet.cat", "用户不再养猫"},
	{"我没有宠物。", "我领养了一只狗。", "user.pet.dog", "用户领养了一只狗"},
	{"我养了一只狗。", "我家狗狗去年走了。", "user.pet.dog", "用户的狗狗走了"},
}

// TestRulesChanges is the offline rules' coverage of changes of fact: each change must yield the
// key of what it changes, with the content that holds now. It logs the coverage per language
// and kind of change.
func TestRulesChanges(t *testing.T) {
	for _, set := range []struct {
		lang  string
		cases []changeCase
	}{{"en", changesEN}, {"zh", changesZH}} {
		covered, byKey := 0, map[string][2]int{}
		for _, c := range set.cases {
			ok := t.Run(c.change, func(t *testing.T) {
				if !strings.HasPrefix(c.before, "I had no") && c.before != "我没有宠物。" {
					if keyOf(Rules(userTurn(c.before)), c.key) == nil {
						t.Errorf("before %q yields no fact of key %s: %q", c.before, c.key, contents(Rules(userTurn(c.before))))
					}
				}
				got := Rules(userTurn(c.change))
				f := keyOf(got, c.key)
				if f == nil {
					t.Fatalf("Rules(%q) yields no fact of key %s: %q", c.change, c.key, contents(got))
				}
				if f.Content != c.want {
					t.Errorf("Rules(%q) key %s:\n got %q\nwant %q", c.change, c.key, f.Content, c.want)
				}
			})
			k := strings.SplitN(strings.TrimPrefix(c.key, "user."), ".", 2)[0]
			n := byKey[k]
			n[1]++
			if ok {
				covered++
				n[0]++
			}
			byKey[k] = n
		}
		t.Logf("%s: %d of %d changes of fact supersede (by kind: %v)", set.lang, covered, len(set.cases), byKey)
		if len(set.cases) < 50 {
			t.Errorf("%s: only %d phrasings; the table should hold at least 50", set.lang, len(set.cases))
		}
	}
}

func keyOf(cs []Candidate, key string) *Candidate {
	for i := range cs {
		if cs[i].Key == key {
			return &cs[i]
		}
	}
	return nil
}

func contents(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Content+" ["+c.Key+"]")
	}
	return out
}

// hardChanges are changes of fact said in ways the offline rules do not read (an LLM does):
// the test logs how many of them the rules catch, and asserts nothing about it.
var hardChanges = []changeCase{
	{"I live in Paris.", "Lisbon is where I live now.", "user.city", ""},
	{"I live in Paris.", "I'm in Lisbon these days.", "user.city", ""},
	{"I live in Paris.", "After ten years in Paris, we finally made the move to Lisbon.", "user.city", ""},
	{"I live in Paris.", "We sold our place in Paris and bought one in Lisbon.", "user.city", ""},
	{"I live in Paris.", "I'm a Lisbon resident now.", "user.city", ""},
	{"I work at Acme.", "I left Google last month.", "user.employer", ""},
	{"I work at Acme.", "I quit Google.", "user.employer", ""},
	{"I work at Acme.", "Acme and I parted ways.", "user.employer", ""},
	{"I'm vegetarian.", "I eat everything now.", "user.diet", ""},
	{"I'm vegetarian.", "I gave up on being vegetarian after a year.", "user.diet", ""},
	{"I code in Python.", "Python was my go-to, but it's all Go now.", "user.programming_language", ""},
	{"I'm married.", "We split up last spring.", "user.relationship", ""},
	{"我住在北京。", "我现在是上海人了。", "user.city", ""},
	{"我住在北京。", "我回老家成都发展了。", "user.city", ""},
	{"我在腾讯工作。", "我换了份工作，去了美团。", "user.employer", ""},
	{"我在腾讯工作。", "我已经从腾讯出来了。", "user.employer", ""},
	{"我在腾讯工作。", "我不干了。", "user.employer", ""},
	{"我结婚了。", "我们离了。", "user.relationship", ""},
	{"我养了一只猫。", "我家猫咪上个月当小天使了。", "user.pet.cat", ""},
}

func TestRulesHardChanges(t *testing.T) {
	caught := 0
	for _, c := range hardChanges {
		if f := keyOf(Rules(userTurn(c.change)), c.key); f != nil {
			caught++
			t.Logf("caught %q: %q", c.change, f.Content)
		}
	}
	t.Logf("changes of fact beyond the offline rules: %d of %d caught", caught, len(hardChanges))
}

// TestRulesChangeNotFacts: what reads like a change but is not the user's own, settled change
// yields no keyed fact.
func TestRulesChangeNotFacts(t *testing.T) {
	for _, in := range []string{
		"If I moved from Paris to Lisbon, would I pay less tax?",
		"I'm thinking of moving to Lisbon.",
		"My sister moved to Lisbon.",
		"I used to live in Paris.",
		"I quit smoking.",
		"I quit Facebook.",
		"I left Paris for a week of holiday.",
		"I got a cat toy for my niece.",
		"I switched to the other tab.",
		"I used Go to parse a log file.",
		"Should I switch from Vim to Neovim?",
		"Do you think I should go vegan?",
		"I lost my keys.",
		"I want to quit my job.",
		"我想搬到上海。",
		"如果我从北京搬到上海，会不会更好？",
		"我朋友搬到了上海。",
		"我不在家。",
		"我用Python写了一个脚本。",
		"我想辞职。",
		"我去上海工作了。",
		"我加入了羽毛球俱乐部。",
		"我带我的狗走了一圈。",
		"我不吃辣。",
		"I would love to volunteer, but I don't live in Kolkata.",
		"I don't work at Google.",
		"I'm not vegan, but I like vegan food.",
		"I'm not married.",
		"I don't have a dog.",
		"I don't use Vim.",
		"我不住北京。",
		"我不吃素。",
	} {
		for _, c := range Rules(userTurn(in)) {
			switch c.Key {
			case "user.city", "user.employer", "user.diet", "user.relationship", "user.programming_language", "user.editor", "user.os", "user.browser":
				t.Errorf("Rules(%q) = %q [%s], want no fact of a changing key", in, c.Content, c.Key)
			}
			if strings.HasPrefix(c.Key, keyPetPrefix) {
				t.Errorf("Rules(%q) = %q [%s], want no pet", in, c.Content, c.Key)
			}
		}
	}
}

var _ = time.Now
