package fact

import (
	"slices"
	"strings"
	"testing"
	"time"
)

type wantFact struct {
	content, category, key string
}

func userTurn(content string) []Turn {
	return []Turn{{ID: "t1", Role: "user", Content: content, Time: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}}
}

func checkFacts(t *testing.T, in string, got []Candidate, want []wantFact) {
	t.Helper()
	var g []wantFact
	for _, c := range got {
		g = append(g, wantFact{c.Content, c.Category, c.Key})
	}
	if !slices.Equal(g, want) {
		t.Errorf("Rules(%q):\n got %q\nwant %q", in, g, want)
	}
}

func TestRulesEnglish(t *testing.T) {
	pref, ident, proj, dec, other := CategoryPreference, CategoryIdentity, CategoryProject, CategoryDecision, CategoryOther
	tests := []struct {
		in   string
		want []wantFact
	}{
		{"I prefer tea over coffee.", []wantFact{{"The user prefers tea over coffee", pref, ""}}},
		{"I like Go.", []wantFact{{"The user likes Go", pref, ""}}},
		{"i really like hiking in the mountains", []wantFact{{"The user likes hiking in the mountains", pref, ""}}},
		{"I love Go so much!", []wantFact{{"The user loves Go", pref, ""}}},
		{"I enjoy reading science fiction.", []wantFact{{"The user enjoys reading science fiction", pref, ""}}},
		{"I love skateboarding.", []wantFact{{"The user loves skateboarding", pref, ""}}},
		{"I hate cilantro.", []wantFact{{"The user hates cilantro", pref, ""}}},
		{"I don't like horror movies.", []wantFact{{"The user does not like horror movies", pref, ""}}},
		{"I do not really like loud bars", []wantFact{{"The user does not like loud bars", pref, ""}}},
		{"I dislike crowds.", []wantFact{{"The user dislikes crowds", pref, ""}}},
		{"I can't stand traffic.", []wantFact{{"The user cannot stand traffic", pref, ""}}},
		{"I like my coffee black.", []wantFact{{"The user likes their coffee black", pref, ""}}},
		{"My favourite programming language is Go.", []wantFact{{"The user's favourite programming language is Go", pref, "user.favorite_language"}}},
		{"my favorite color is blue", []wantFact{{"The user's favorite color is blue", pref, "user.favorite_color"}}},
		{"My favorite foods are sushi and ramen.", []wantFact{{"The user's favorite foods are sushi and ramen", pref, "user.favorite_food"}}},
		{"My favorite board game is Carcassonne.", []wantFact{{"The user's favorite board game is Carcassonne", pref, "user.favorite_board_game"}}},
		{"My favorite way to relax is yoga.", []wantFact{{"The user's favorite way to relax is yoga", pref, ""}}},
		{"My name is Ana Lopez.", []wantFact{{"The user's name is Ana Lopez", ident, "user.name"}}},
		{"my name is bob", []wantFact{{"The user's name is bob", ident, "user.name"}}},
		{"Please call me Ishmael.", []wantFact{{"The user's name is Ishmael", ident, "user.name"}}},
		{"I live in Paris.", []wantFact{{"The user lives in Paris", ident, "user.city"}}},
		{"I live in Berlin with my wife.", []wantFact{{"The user lives in Berlin", ident, "user.city"}}},
		{"I've lived in Rome since 2019.", []wantFact{{"The user lives in Rome", ident, "user.city"}}},
		{"I live in a small town near Lyon.", []wantFact{{"The user lives in a small town near Lyon", ident, ""}}},
		{"I moved to Berlin last year.", []wantFact{{"The user lives in Berlin", ident, "user.city"}}},
		{"I just moved to New York City.", []wantFact{{"The user lives in New York City", ident, "user.city"}}},
		{"I'm based in London.", []wantFact{{"The user is based in London", ident, "user.city"}}},
		{"I'm based in the San Francisco Bay Area", []wantFact{{"The user is based in the San Francisco Bay Area", ident, "user.city"}}},
		{"I'm originally from Spain.", []wantFact{{"The user is from Spain", ident, "user.hometown"}}},
		{"I work at Google as an engineer.", []wantFact{{"The user works at Google", ident, "user.employer"}}},
		{"I work for Acme Corp.", []wantFact{{"The user works for Acme Corp", ident, "user.employer"}}},
		{"I'm working for Stripe now.", []wantFact{{"The user works for Stripe", ident, "user.employer"}}},
		{"I work for myself.", []wantFact{{"The user is self-employed", ident, "user.employer"}}},
		{"I work as a nurse.", []wantFact{{"The user works as a nurse", ident, "user.occupation"}}},
		{"I work on a compiler for a toy language.", []wantFact{{"The user works on a compiler for a toy language", proj, ""}}},
		{"I'm working on a mobile app for runners.", []wantFact{{"The user is working on a mobile app for runners", proj, ""}}},
		{"I've been working on my thesis.", []wantFact{{"The user has been working on their thesis", proj, ""}}},
		{"I'm a software engineer.", []wantFact{{"The user is a software engineer", ident, "user.occupation"}}},
		{"I am a teacher", []wantFact{{"The user is a teacher", ident, "user.occupation"}}},
		{"I'm an engineer at Acme.", []wantFact{{"The user is an engineer at Acme", ident, "user.occupation"}}},
		{"I'm a student at MIT.", []wantFact{{"The user is a student at MIT", ident, "user.occupation"}}},
		{"I'm a vegetarian.", []wantFact{{"The user is a vegetarian", ident, "user.diet"}}},
		{"I'm vegan.", []wantFact{{"The user is vegan", ident, "user.diet"}}},
		{"I'm allergic to peanuts.", []wantFact{{"The user is allergic to peanuts", ident, ""}}},
		{"I'm a big fan of jazz.", []wantFact{{"The user is a big fan of jazz", pref, ""}}},
		{"My birthday is May 3.", []wantFact{{"The user's birthday is May 3", ident, "user.birthday"}}},
		{"My time zone is CET.", []wantFact{{"The user's time zone is CET", ident, "user.timezone"}}},
		{"My native language is Portuguese.", []wantFact{{"The user's native language is Portuguese", ident, "user.native_language"}}},
		{"We decided to use Postgres.", []wantFact{{"The user and others decided to use Postgres", dec, ""}}},
		{"I decided to quit my job.", []wantFact{{"The user decided to quit their job", dec, ""}}},
		{"We've decided on Kubernetes.", []wantFact{{"The user and others decided on Kubernetes", dec, ""}}},
		{"Let's use SQLite.", []wantFact{{"The user decided to use SQLite", dec, ""}}},
		{"let's go with option B", []wantFact{{"The user decided to go with option B", dec, ""}}},
		{"Our project uses Go 1.26.", []wantFact{{"The user's project uses Go 1.26", proj, "project.language"}}},
		{"Our backend is written in Rust.", []wantFact{{"The user's backend is written in Rust", proj, "project.language"}}},
		{"Our app uses PostgreSQL.", []wantFact{{"The user's app uses PostgreSQL", proj, "project.database"}}},
		{"We use Redis for caching.", []wantFact{{"The user's team uses Redis for caching", proj, "project.database"}}},
		{"We use Sentry for error tracking.", []wantFact{{"The user's team uses Sentry for error tracking", proj, "project.error_tracking"}}},
		{"We're using Kubernetes for deployment.", []wantFact{{"The user's team uses Kubernetes for deployment", proj, "project.deployment"}}},
		{"We use Django.", []wantFact{{"The user's team uses Django", proj, "project.framework"}}},
		// Several facts in one turn, clauses cut at connectives.
		// Contact details stay out, the rest of the turn still counts.
		{"My email is ana@example.com and I live in Paris.", []wantFact{{"The user lives in Paris", ident, "user.city"}}},
		{"I really like Go, but I hate Java.", []wantFact{{"The user likes Go", pref, ""}, {"The user hates Java", pref, ""}}},
		{"I like Go and I live in Berlin.", []wantFact{{"The user likes Go", pref, ""}, {"The user lives in Berlin", ident, "user.city"}}},
		{"I love cooking because it relaxes me.", []wantFact{{"The user loves cooking", pref, ""}}},
		{"I think I prefer dark mode.", []wantFact{{"The user prefers dark mode", pref, ""}}},
		// A statement inside a question still counts; the question itself does not.
		{"I live in Paris, can you recommend a restaurant?", []wantFact{{"The user lives in Paris", ident, "user.city"}}},
		{"Can you suggest a dish, since I'm vegan?", []wantFact{{"The user is vegan", ident, "user.diet"}}},
		// Everyday facts: lower confidence, category other.
		{"By the way, I have two cats.", []wantFact{{"The user has two cats", other, "user.pet.cat"}}},
		{"I just finished reading Dune.", []wantFact{{"The user recently finished reading Dune", other, ""}}},
		{"I go to the gym every Tuesday.", []wantFact{{"The user goes to the gym every Tuesday", other, ""}}},
		{"I've been taking salsa classes.", []wantFact{{"The user has been taking salsa classes", other, ""}}},
		{"My highest score is 124 points.", []wantFact{{"The user's highest score is 124 points", other, ""}}},
		{"I've been into historical fiction lately.", []wantFact{{"The user has been into historical fiction", pref, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			checkFacts(t, tt.in, Rules(userTurn(tt.in)), tt.want)
		})
	}
}

func TestRulesChinese(t *testing.T) {
	pref, ident, proj, dec, other := CategoryPreference, CategoryIdentity, CategoryProject, CategoryDecision, CategoryOther
	tests := []struct {
		in   string
		want []wantFact
	}{
		{"我喜欢喝茶。", []wantFact{{"用户喜欢喝茶", pref, ""}}},
		{"我也很喜欢看电影", []wantFact{{"用户喜欢看电影", pref, ""}}},
		{"我更喜欢安静的地方", []wantFact{{"用户更喜欢安静的地方", pref, ""}}},
		{"我爱吃火锅", []wantFact{{"用户爱吃火锅", pref, ""}}},
		{"我喜欢猫", []wantFact{{"用户喜欢猫", pref, ""}}},
		{"我最喜欢的编程语言是 Go。", []wantFact{{"用户最喜欢的编程语言是 Go", pref, "user.favorite_language"}}},
		{"我最喜欢的水果是芒果", []wantFact{{"用户最喜欢的水果是芒果", pref, "user.favorite_fruit"}}},
		{"我最喜欢的颜色是蓝色！", []wantFact{{"用户最喜欢的颜色是蓝色", pref, "user.favorite_color"}}},
		{"我最爱的一本书是《三体》", []wantFact{{"用户最爱的一本书是《三体》", pref, "user.favorite_book"}}},
		{"我最喜欢的城市是成都", []wantFact{{"用户最喜欢的城市是成都", pref, "user.favorite_city"}}},
		{"我最喜欢的季节是秋天", []wantFact{{"用户最喜欢的季节是秋天", pref, "user.favorite_season"}}},
		{"我最喜欢的一道菜是宫保鸡丁", []wantFact{{"用户最喜欢的一道菜是宫保鸡丁", pref, "user.favorite_dish"}}},
		{"我不喜欢香菜", []wantFact{{"用户不喜欢香菜", pref, ""}}},
		{"我不太喜欢吃辣的", []wantFact{{"用户不太喜欢吃辣的", pref, ""}}},
		{"我讨厌下雨天", []wantFact{{"用户讨厌下雨天", pref, ""}}},
		{"我叫小明。", []wantFact{{"用户叫小明", ident, "user.name"}}},
		{"我的名字是李华", []wantFact{{"用户的名字是李华", ident, "user.name"}}},
		{"你可以叫我小王", []wantFact{{"用户叫小王", ident, "user.name"}}},
		{"我住在北京", []wantFact{{"用户住在北京", ident, "user.city"}}},
		{"我现在住在深圳已经三年了", []wantFact{{"用户住在深圳", ident, "user.city"}}},
		{"我搬到了上海", []wantFact{{"用户住在上海", ident, "user.city"}}},
		{"我来自成都", []wantFact{{"用户来自成都", ident, "user.hometown"}}},
		{"我在腾讯工作", []wantFact{{"用户在腾讯工作", ident, "user.employer"}}},
		{"我在字节跳动上班", []wantFact{{"用户在字节跳动上班", ident, "user.employer"}}},
		{"我是一名程序员", []wantFact{{"用户是一名程序员", ident, "user.occupation"}}},
		{"我是一名后端工程师。", []wantFact{{"用户是一名后端工程师", ident, "user.occupation"}}},
		{"我是学生", []wantFact{{"用户是学生", ident, "user.occupation"}}},
		{"我是做前端的", []wantFact{{"用户是做前端的", ident, "user.occupation"}}},
		{"我的生日是3月5号", []wantFact{{"用户的生日是3月5号", ident, "user.birthday"}}},
		{"我们的项目用 Go", []wantFact{{"用户的项目用 Go", proj, "project.language"}}},
		{"我们的项目使用PostgreSQL", []wantFact{{"用户的项目使用PostgreSQL", proj, "project.database"}}},
		{"我们用 Redis 做缓存", []wantFact{{"用户的团队用 Redis 做缓存", proj, "project.database"}}},
		{"我们团队用 Kafka 做消息队列", []wantFact{{"用户的团队用 Kafka 做消息队列", proj, "project.queue"}}},
		{"我们用 Jenkins 做持续集成", []wantFact{{"用户的团队用 Jenkins 做持续集成", proj, "project.ci"}}},
		{"我们决定用 PostgreSQL。", []wantFact{{"用户和其他人决定用 PostgreSQL", dec, ""}}},
		{"我决定辞职了", []wantFact{{"用户决定辞职", dec, ""}}},
		{"那就用 Postgres 吧", []wantFact{{"用户决定用 Postgres", dec, ""}}},
		{"我正在开发一个记账小程序", []wantFact{{"用户正在开发一个记账小程序", proj, ""}}},
		{"我也很喜欢看电影，但是我不喜欢恐怖片。", []wantFact{{"用户喜欢看电影", pref, ""}, {"用户不喜欢恐怖片", pref, ""}}},
		{"我住在北京，有什么好吃的餐厅吗？", []wantFact{{"用户住在北京", ident, "user.city"}}},
		{"我养了一只猫，叫咪咪。", []wantFact{{"用户养了一只猫", other, "user.pet.cat"}}},
		{"我每周去两次健身房", []wantFact{{"用户每周去两次健身房", other, ""}}},
		{"我刚买了一辆特斯拉", []wantFact{{"用户最近买了一辆特斯拉", other, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			checkFacts(t, tt.in, Rules(userTurn(tt.in)), tt.want)
		})
	}
}

// TestRulesNothing lists questions, hypotheticals, small talk and polite phrases that must
// yield no fact.
func TestRulesNothing(t *testing.T) {
	for _, in := range []string{
		"", " ", "a", "ok", "Thanks!", "Hello there.", "What's the weather like today?",
		"Do I like tea?", "Do you think I'd like Rust?", "Would I like Rust?", "what do I like", "Am I a developer?",
		"If I moved to Berlin, I would be happy.", "If I lived in Paris I would walk everywhere.",
		"I'm not sure I like it.", "Maybe I like jazz.", "I wonder whether I prefer tea.", "I don't know if I like it.",
		"You said I live in Rome.", "I'd like a coffee.", "I would love to visit Japan.", "I used to live in Rome.",
		"I lived in Rome for two years.", "I worked at IBM.",
		"I love it!", "I love that!", "I like your idea.", "I like how you explained it.", "Thanks, I love the suggestions!",
		"I love to hear that.", "I hate to say it.", "I like the sound of that.", "I love all of them.",
		"I'm a bit tired.", "I'm a little confused.", "I'm so happy.", "I'm working on it.", "I work at home.",
		"I work at night.", "Call me when you're done.", "call me back later", "Let's pick up where we left off.",
		"My favourite thing about you is your patience.", "We use it a lot.", "I have a question.", "I have no idea.",
		"What I love most about Go is its simplicity.", "One thing I hate is waiting.",
		// Contact details and secrets are never remembered.
		"My email is ana@example.com.", "My phone number is 555-123-4567.", "I live at 221B Baker Street.",
		"My password is hunter2.", "Call me at 555 123 4567.", "I love my API key sk-abcdefghijklmnop1234.",
		"Reach me at 555-123-4567 or ana@example.com.", "My work email is ana@acme.com.",
		"我喜欢什么？", "我喜欢Go吗", "你觉得我喜欢什么？", "如果我搬到上海，我会很开心", "我喜欢你", "我觉得我喜欢这个",
		"我是说这个不对", "我叫了外卖", "我在找工作", "我在努力工作", "我在家工作", "我的邮箱是 a@b.com",
		"我住在北京市朝阳区建国路88号", "我的密码是123456", "好的，谢谢！", "你好",
	} {
		if got := Rules(userTurn(in)); len(got) != 0 {
			t.Errorf("Rules(%q) = %+v, want nothing", in, got)
		}
	}
}

func TestRulesIgnoresOtherRoles(t *testing.T) {
	turns := []Turn{
		{ID: "a1", Role: "assistant", Content: "I love Go and I live in Paris."},
		{ID: "s1", Role: "system", Content: "My name is Claude."},
		{ID: "x1", Role: "tool", Content: "I work at Google."},
		{ID: "u1", Role: "user", Content: "Nice. I live in Berlin."},
		{ID: "u2", Role: "User", Content: "我喜欢喝茶"},
	}
	got := Rules(turns)
	checkFacts(t, "mixed roles", got, []wantFact{
		{"The user lives in Berlin", CategoryIdentity, "user.city"},
		{"用户喜欢喝茶", CategoryPreference, ""},
	})
	if len(got) == 2 && (!slices.Equal(got[0].Provenance, []string{"u1"}) || !slices.Equal(got[1].Provenance, []string{"u2"})) {
		t.Errorf("provenance = %v, %v; want [u1], [u2]", got[0].Provenance, got[1].Provenance)
	}
}

func TestRulesCityChangeKeepsKey(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	got := Rules([]Turn{
		{ID: "t1", Role: "user", Content: "I live in Paris.", Time: t0},
		{ID: "t2", Role: "user", Content: "I moved to Berlin.", Time: t0.Add(time.Hour)},
	})
	checkFacts(t, "Paris then Berlin", got, []wantFact{
		{"The user lives in Paris", CategoryIdentity, "user.city"},
		{"The user lives in Berlin", CategoryIdentity, "user.city"},
	})
	if len(got) == 2 && (!got[0].Time.Equal(t0) || !got[1].Time.Equal(t0.Add(time.Hour))) {
		t.Errorf("times = %v, %v; want each turn's time", got[0].Time, got[1].Time)
	}
}

func TestRulesMergesDuplicates(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	got := Rules([]Turn{
		{ID: "t1", Role: "user", Content: "I love Go!", Time: t0.Add(2 * time.Hour)},
		{ID: "t2", Role: "assistant", Content: "Great."},
		{ID: "t3", Role: "user", Content: "Honestly, I LOVE   go. I love Go.", Time: t0},
		{ID: "t4", Role: "user", Content: "i love go", Time: t0.Add(time.Hour)},
	})
	if len(got) != 1 {
		t.Fatalf("Rules = %+v, want one merged candidate", got)
	}
	c := got[0]
	if c.Content != "The user loves Go" {
		t.Errorf("content = %q, want the first statement's", c.Content)
	}
	if want := []string{"t1", "t3", "t4"}; !slices.Equal(c.Provenance, want) {
		t.Errorf("provenance = %v, want %v (union, conversation order, no repeats)", c.Provenance, want)
	}
	if !c.Time.Equal(t0) {
		t.Errorf("time = %v, want the earliest turn's %v", c.Time, t0)
	}
	if c.Confidence <= 0 || c.Confidence > 1 {
		t.Errorf("confidence = %v, want in (0,1]", c.Confidence)
	}
}

// TestRulesInvariants checks what every candidate of Rules satisfies, over a mixed corpus.
func TestRulesInvariants(t *testing.T) {
	var turns []Turn
	for i, s := range strings.Split(rulesCorpus, "\n") {
		turns = append(turns, Turn{ID: "t" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Role: "user", Content: s})
	}
	got := Rules(turns)
	if len(got) == 0 {
		t.Fatal("no candidates from the corpus")
	}
	seen := map[string]bool{}
	for _, c := range got {
		if !ValidCategory(c.Category) || c.Content == "" || len(c.Provenance) == 0 || c.Confidence <= 0 || c.Confidence > 1 {
			t.Errorf("bad candidate %+v", c)
		}
		if n := Normalize(c.Content); seen[n] {
			t.Errorf("duplicate normalised content %q", n)
		} else {
			seen[n] = true
		}
		if c.Key != "" && !reKey.MatchString(c.Key) {
			t.Errorf("bad key %q", c.Key)
		}
	}
}

const rulesCorpus = `I prefer tea over coffee. I live in Paris, and I work at Acme.
我最喜欢的编程语言是 Go，我住在北京。
My favourite food is pizza! We decided to use Postgres; our project uses Go.
Can you help me? I'm a developer and I'm working on a CLI tool.
I love Go. I LOVE GO!!
我们用 Redis 做缓存，我们决定下周上线。`

func FuzzRules(f *testing.F) {
	for _, s := range []string{
		"I prefer tea over coffee.", "My favourite programming language is Go.", "我最喜欢的编程语言是 Go。",
		"I'm a software engineer at Acme, but I live in Berlin.", "Do I like tea?", "我叫小明，我住在北京。",
		"let's use SQLite", "we use Redis for caching", "I've been taking salsa classes every Monday",
		"\xff\xfe I like \x00 Go", "I like", "我喜欢", "...", "I'm a", "My name is", "call me",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range Rules([]Turn{{ID: "t", Role: "user", Content: s}}) {
			if c.Content == "" || !ValidCategory(c.Category) || !slices.Equal(c.Provenance, []string{"t"}) {
				t.Fatalf("Rules(%q) gave a bad candidate %+v", s, c)
			}
		}
	})
}

// TestRulesLongInput: pathological turns stay fast (matching is bounded per clause).
func TestRulesLongInput(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("我喜欢", 5000),
		strings.Repeat("我喜欢，", 5000),
		strings.Repeat("I like I love ", 3000),
		strings.Repeat("I like Go. ", 3000),
		strings.Repeat("a", 100000),
	} {
		start := time.Now()
		Rules([]Turn{{ID: "t", Role: "user", Content: s}})
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Rules on %d bytes took %v", len(s), d)
		}
	}
}

func BenchmarkRules(b *testing.B) {
	turns := []Turn{
		{ID: "t1", Role: "user", Content: "Hi! I'm a software engineer at Acme and I live in Berlin. Can you help me plan a trip to Japan? I love hiking, but I hate crowds."},
		{ID: "t2", Role: "assistant", Content: "Sure! Japan has many great hiking trails, for example the Kumano Kodo and the Nakasendo. When would you like to go?"},
		{ID: "t3", Role: "user", Content: "Probably in October. By the way, I've been taking Japanese classes every Monday, and my favourite food is ramen."},
		{ID: "t4", Role: "user", Content: "我最喜欢的编程语言是 Go，我们的项目用 PostgreSQL。我们决定下个月上线。"},
	}
	for b.Loop() {
		Rules(turns)
	}
}

func TestRuleHints(t *testing.T) {
	for _, r := range allRules {
		if len(r.hints) == 0 {
			t.Errorf("rule %s has no hints; every rule should start with a literal", r.name)
		}
		for _, h := range r.hints {
			if r.latin && strings.ToLower(h) != h {
				t.Errorf("rule %s: hint %q is not lower case", r.name, h)
			}
		}
	}
}
