package fact

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// advZH is any run of adverbs between 我 and its verb (我也很喜欢, 我现在住在, 我一直在).
const advZH = `(?:很|非常|特别|也|还|真的|挺|比较|一直|都|超|超级|最近|现在|目前|已经|其实|本来|确实|蛮|十分|相当|真|刚|刚刚|前不久|去年|今年|上个月|上周)*`

// zh compiles a Chinese rule, {ADV} standing for advZH.
func zh(name, pattern string, build func(g []string) (found, bool)) rule {
	pattern = strings.ReplaceAll(pattern, "{ADV}", advZH)
	return newRule(name, pattern, false, build)
}

// chineseRules, most specific first. Each pattern's last group is the object, which runs to
// the end of the clause.
var chineseRules = []rule{
	// 我最喜欢的编程语言是 Go -> key user.favorite_language.
	zh("最喜欢的", `我{ADV}最(喜欢|爱)的(.{1,12}?)(?:是|就是|要数|当属)(.+)$`, func(g []string) (found, bool) {
		thing := strings.TrimSpace(g[2])
		if reZhQWords.MatchString(thing) || strings.ContainsAny(thing, "你他她") {
			return found{}, false
		}
		obj, ok := cleanZH(g[3])
		if !ok {
			return found{}, false
		}
		key := ""
		if k := favouriteKeyZH(thing); k != "" {
			key = "user.favorite_" + k
		}
		return found{content: "用户最" + g[1] + "的" + thing + "是" + obj, category: CategoryPreference, key: key, confidence: 0.9}, true
	}),
	// 我叫小明 / 我的名字是小明 / 叫我小明就行 -> key user.name.
	zh("名字", `我的名字(?:是|叫)(.+)$`, func(g []string) (found, bool) { return nameZH("用户的名字是", g[1]) }),
	zh("我叫", `我{ADV}叫(?:做)?(.+)$`, func(g []string) (found, bool) { return nameZH("用户叫", g[1]) }),
	zh("叫我", `(?:可以|就|都|请)叫我(.+)$`, func(g []string) (found, bool) { return nameZH("用户叫", g[1]) }),
	// 我的生日是五月三号 and a few other slots.
	zh("我的", `我的(生日|出生日期|家乡|老家|职业|母语|时区)(是|在)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[3])
		if !ok {
			return found{}, false
		}
		return found{content: "用户的" + g[1] + g[2] + obj, category: CategoryIdentity, key: slotKeysZH[g[1]], confidence: 0.9}, true
	}),
	// 那就用 Postgres 吧 -> decision.
	zh("就用吧", `(?:就|还是)(用|选|选择|采用)(.+?)吧$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[2])
		if !ok {
			return found{}, false
		}
		return found{content: "用户决定" + g[1] + obj, category: CategoryDecision, confidence: 0.7}, true
	}),
	// 我们的项目用 Go -> project, key project.language.
	zh("项目用", `(我们|我)的?(项目|应用|服务|产品|系统|后端|前端|网站|代码库|代码|仓库|技术栈)(?:现在|目前|主要|都|也|一直)*(用的是|使用的是|采用的是|是用|用了|用|使用|采用|基于|跑在|部署在)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[4])
		if !ok {
			return found{}, false
		}
		key := ""
		if c := techClass(obj); c != "" {
			key = "project." + c
		}
		return found{content: "用户的" + g[2] + g[3] + obj, category: CategoryProject, key: key, confidence: 0.8}, true
	}),
	// 我住在北京 / 我搬到了上海 -> key user.city; 我来自成都 -> key user.hometown.
	zh("住在", `我{ADV}(?:住在|居住在|生活在|定居在)(.+)$`, func(g []string) (found, bool) {
		return placeZH("用户住在", g[1], "user.city", CategoryIdentity)
	}),
	zh("搬到", `我{ADV}(?:搬到了|搬到|搬去了|搬去|搬家到了|搬家到|搬回了|搬回)(.+)$`, func(g []string) (found, bool) {
		return placeZH("用户搬到了", g[1], "user.city", CategoryOther)
	}),
	zh("来自", `我{ADV}(?:来自|是从)(.+?)(?:来的)?$`, func(g []string) (found, bool) {
		f, ok := placeZH("用户来自", g[1], "user.hometown", "")
		return f, ok && f.key != ""
	}),
	// 我在腾讯工作 -> key user.employer.
	zh("在工作", `我{ADV}在(.{1,20}?)(上班|工作|任职|供职|实习)`, func(g []string) (found, bool) {
		org := strings.TrimSpace(g[1])
		if strings.HasSuffix(org, "地") || reZhQWords.MatchString(org) || strings.ContainsAny(org, "你他她") {
			return found{}, false
		}
		for _, p := range notEmployerZH {
			if strings.HasPrefix(org, p) {
				return found{}, false
			}
		}
		obj, ok := cleanZH(org)
		if !ok {
			return found{}, false
		}
		return found{content: "用户在" + obj + g[2], category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
	}),
	zh("就职于", `我{ADV}(?:就职于|任职于|供职于)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[1])
		if !ok {
			return found{}, false
		}
		return found{content: "用户就职于" + obj, category: CategoryIdentity, key: "user.employer", confidence: 0.85}, true
	}),
	// 我是一名程序员 / 我是设计师 / 我是做前端的 -> identity, key user.occupation for occupations.
	zh("是一名", `我{ADV}是(一名|一位|一个|一只|个)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[2])
		if !ok {
			return found{}, false
		}
		measure := g[1]
		if measure == "个" {
			measure = "一个"
		}
		key := ""
		if occupationZH(obj) {
			key = "user.occupation"
		}
		return found{content: "用户是" + measure + obj, category: CategoryIdentity, key: key, confidence: 0.8}, true
	}),
	zh("是做的", `我{ADV}是(做|搞|干)(.{1,12}?)的$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[2])
		if !ok {
			return found{}, false
		}
		return found{content: "用户是" + g[1] + obj + "的", category: CategoryIdentity, key: "user.occupation", confidence: 0.75}, true
	}),
	zh("是", `我{ADV}是(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[1])
		if !ok || utf8.RuneCountInString(obj) > 14 || !occupationZH(obj) {
			return found{}, false
		}
		for _, p := range []string{"说", "不是", "在", "从", "因为", "为了", "想", "要", "被", "给", "和", "跟"} {
			if strings.HasPrefix(obj, p) {
				return found{}, false
			}
		}
		return found{content: "用户是" + obj, category: CategoryIdentity, key: "user.occupation", confidence: 0.8}, true
	}),
	// 我在开发一个记账应用 / 我正在做一个小程序项目 -> project.
	zh("开发", `我{ADV}(正在|在)(开发)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[3])
		if !ok {
			return found{}, false
		}
		return found{content: "用户正在开发" + obj, category: CategoryProject, confidence: 0.7}, true
	}),
	zh("做项目", `我{ADV}(正在|在)(做|搞|写)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[3])
		if !ok || !reProjectNounZH.MatchString(obj) {
			return found{}, false
		}
		return found{content: "用户正在" + g[2] + obj, category: CategoryProject, confidence: 0.7}, true
	}),
	// Preferences.
	zh("喜欢", `我{ADV}(不太喜欢|不怎么喜欢|不是很喜欢|不喜欢|不爱吃|不爱喝|不爱|更喜欢|更爱|最喜欢|最爱|偏爱|偏好|喜欢|爱吃|爱喝|爱看|爱听|爱玩|热爱|讨厌|受不了|爱)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[2])
		if !ok || strings.HasPrefix(obj, "的") && utf8.RuneCountInString(obj) < 3 {
			return found{}, false
		}
		for _, p := range []string{"死", "上你", "不爱", "过"} {
			if strings.HasPrefix(obj, p) {
				return found{}, false
			}
		}
		return found{content: "用户" + g[1] + obj, category: CategoryPreference, confidence: 0.8}, true
	}),
	// Decisions.
	zh("我们决定", `我们{ADV}决定(?:了)?(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[1])
		if !ok {
			return found{}, false
		}
		return found{content: "用户和其他人决定" + obj, category: CategoryDecision, confidence: 0.75}, true
	}),
	zh("我决定", `我{ADV}决定(?:了)?(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[1])
		if !ok {
			return found{}, false
		}
		return found{content: "用户决定" + obj, category: CategoryDecision, confidence: 0.75}, true
	}),
	// 我们用 Redis 做缓存 -> project. Only for a named tool (Latin script), so that
	// "我们用了三个小时" is not a project setting.
	zh("我们用", `我们(?:团队|公司)?(?:现在|目前|主要|都|也|一直|平时)*(在用|用的是|使用|采用|用)(.+)$`, func(g []string) (found, bool) {
		obj, ok := cleanZH(g[2])
		if !ok {
			return found{}, false
		}
		r, _ := utf8.DecodeRuneInString(strings.TrimSpace(obj))
		if r >= utf8.RuneSelf || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return found{}, false
		}
		key := ""
		if c := techClass(obj); c != "" {
			key = "project." + c
		} else if m := rePurposeZH.FindStringSubmatch(obj); m != nil {
			if p, ok := purposesZH[m[1]]; ok {
				key = "project." + p
			}
		}
		return found{content: "用户的团队" + g[1] + obj, category: CategoryProject, key: key, confidence: 0.7}, true
	}),
}

// closersZH are closing brackets and quotes, which stay at the end of an object (《三体》).
const closersZH = "》」』”’）)\"'】"

var (
	reParticleZH    = regexp.MustCompile(`(?:了|啊|呀|哦|噢|喔|呢|吧|嘛|啦|哈+|呵+|哟|嗯|～|~|\s)+$`)
	reProjectNounZH = regexp.MustCompile(`(?i)项目|应用|app|网站|系统|工具|产品|游戏|插件|库|程序|小程序|服务|平台|框架|毕设|毕业设计|机器人|bot`)
	rePurposeZH     = regexp.MustCompile(`(?:来做|做|作为|当作|当|来)(.+)$`)
	notEmployerZH   = []string{"家", "这", "那", "晚上", "周末", "白天", "外面", "远程", "找", "换", "做", "干", "忙", "准备", "考虑",
		"想", "努力", "认真", "拼命", "专心", "加班", "继续", "好好", "家里", "线上", "网上", "路上", "车上"}
	vagueFirstZH = []string{"你", "您", "他", "她", "它", "这", "那", "啥", "谁", "哪", "怎么", "什么", "大家", "别人"}
)

// cleanZH trims an object, drops trailing particles (了, 啊, 吧, …), rewrites 我 as 用户 and
// checks its length; objects that point elsewhere (你, 这个, 那样) or ask (什么, 哪里) fail.
func cleanZH(s string) (string, bool) {
	spaced := s != "" && unicode.IsSpace(rune(s[0]))
	s = strings.TrimSpace(s)
	for {
		t := strings.TrimRightFunc(s, func(r rune) bool {
			return unicode.IsSpace(r) || unicode.Is(unicode.So, r) ||
				unicode.IsPunct(r) && !strings.ContainsRune(closersZH, r)
		})
		t = reParticleZH.ReplaceAllString(t, "")
		if t == s {
			break
		}
		s = t
	}
	s = strings.TrimSpace(s)
	s = strings.NewReplacer("我们", "我们", "我自己", "自己", "我的", "用户的", "我", "用户").Replace(s)
	if !longEnough(s) || utf8.RuneCountInString(s) > maxObject || reZhQWords.MatchString(s) {
		return "", false
	}
	for _, p := range vagueFirstZH {
		if strings.HasPrefix(s, p) {
			return "", false
		}
	}
	// Keep the space the user wrote between Chinese and a Latin name: "用 Go".
	if r, _ := utf8.DecodeRuneInString(s); spaced && r < utf8.RuneSelf {
		s = " " + s
	}
	return s, true
}

// nameZH builds a user.name fact. A Chinese name is at most four characters; a name in Latin
// script at most three words.
func nameZH(prefix, obj string) (found, bool) {
	obj = strings.TrimSpace(obj)
	for _, suf := range []string{"就行了", "就行", "就好了", "就好", "就可以了", "就可以", "好了"} {
		obj = strings.TrimSuffix(obj, suf)
	}
	name, ok := cleanZH(obj)
	if !ok || strings.Contains(name, "用户") || strings.Contains(name, "的") {
		return found{}, false
	}
	if first, _ := utf8.DecodeRuneInString(name); strings.ContainsRune("了过着他她你它人车醒外做错对好", first) {
		return found{}, false
	}
	if hasHan(name) {
		if utf8.RuneCountInString(name) > 4 || strings.ContainsAny(name, " ") {
			return found{}, false
		}
	} else if len(strings.Fields(name)) > 3 {
		return found{}, false
	}
	return found{content: prefix + name, category: CategoryIdentity, key: "user.name", confidence: 0.9}, true
}

var reCutPlaceZH = regexp.MustCompile(`已经|了|有|和|跟|与|的|附近|这边|那边|一带|快|好几|差不多|大概|\d|几年|两年|三年|一年|半年|住|工作|上班|生活|读书|上学`)

// placeZH keys a place when the object names one (北京, 上海浦东); a generic place (一个小镇,
// 宿舍, 家里) gives an unkeyed fact of keylessCategory, or nothing when that is "".
func placeZH(prefix, obj, key, keylessCategory string) (found, bool) {
	o, ok := cleanZH(obj)
	if !ok {
		return found{}, false
	}
	place := strings.TrimRightFunc(cutAt(o, reCutPlaceZH), unicode.IsSpace)
	generic := strings.TrimSpace(place) == "" || utf8.RuneCountInString(place) > 10 || strings.HasPrefix(place, "一") || strings.HasPrefix(place, "用户")
	for _, s := range []string{"家", "里", "宿舍", "公寓", "房子", "楼", "附近", "一起", "学校", "小区"} {
		if strings.HasSuffix(place, s) {
			generic = true
		}
	}
	if !generic {
		return found{content: prefix + place, category: CategoryIdentity, key: key, confidence: 0.9}, true
	}
	if keylessCategory == "" {
		return found{}, false
	}
	return found{content: prefix + o, category: keylessCategory, confidence: 0.7}, true
}

var slotKeysZH = map[string]string{
	"生日": "user.birthday", "出生日期": "user.birthday", "家乡": "user.hometown", "老家": "user.hometown",
	"职业": "user.occupation", "母语": "user.native_language", "时区": "user.timezone",
}

var occupationsZH = []string{"程序员", "工程师", "开发者", "开发", "设计师", "医生", "护士", "老师", "教师", "教授", "学生",
	"研究生", "博士生", "律师", "会计", "会计师", "厨师", "记者", "作家", "编辑", "经理", "架构师", "分析师", "科学家",
	"研究员", "司机", "警察", "公务员", "销售", "创业者", "自由职业者", "摄影师", "艺术家", "音乐家", "运营", "实习生",
	"主管", "总监", "翻译", "药剂师", "咨询师", "顾问", "产品", "测试", "运维", "画家", "演员", "歌手", "主播", "博主",
	"创始人", "老板", "店主", "农民", "工人", "军人", "飞行员", "建筑师", "营养师", "心理咨询师", "理发师", "保安", "快递员",
	"外卖员", "客服", "秘书", "助理", "导游", "教练", "大学生", "高中生", "初中生", "小学生", "留学生", "博士", "硕士"}

// occupationZH reports whether a noun phrase ends with an occupation (一名后端工程师).
func occupationZH(s string) bool {
	s = strings.TrimSuffix(s, "的")
	for _, o := range occupationsZH {
		if strings.HasSuffix(s, o) {
			return true
		}
	}
	return false
}

var favouriteThingsZH = map[string]string{
	"编程语言": "language", "语言": "language", "程序语言": "language", "颜色": "color", "食物": "food", "菜": "dish",
	"水果": "fruit", "蔬菜": "vegetable", "电影": "movie", "书": "book", "小说": "book", "歌": "song", "歌曲": "song",
	"乐队": "band", "歌手": "singer", "运动": "sport", "球队": "team", "游戏": "game", "饮料": "drink", "动物": "animal",
	"季节": "season", "城市": "city", "国家": "country", "编辑器": "editor", "作家": "author", "作者": "author",
	"电视剧": "show", "剧": "show", "餐厅": "restaurant", "花": "flower", "数字": "number", "甜点": "dessert",
	"零食": "snack", "演员": "actor", "框架": "framework", "数据库": "database", "音乐": "music", "菜系": "cuisine",
	"节日": "holiday", "科目": "subject", "明星": "celebrity", "地方": "place", "爱好": "hobby", "茶": "tea",
	"咖啡": "coffee", "酒": "drink", "宠物": "pet", "导演": "director", "画家": "painter", "诗人": "poet",
	"动漫": "anime", "动画": "anime", "操作系统": "os", "早餐": "breakfast",
}

var reMeasureZH = regexp.MustCompile(`^(?:一|两|几)?(?:个|本|部|首|种|门|款|位|只|道|家|支|座|杯|件|样)`)

// favouriteKeyZH maps 编程语言 to "language", 一本书 to "book"; "" when the thing is not known.
func favouriteKeyZH(thing string) string {
	t := reMeasureZH.ReplaceAllString(strings.TrimSpace(thing), "")
	return favouriteThingsZH[t]
}

var purposesZH = map[string]string{
	"缓存": "cache", "数据库": "database", "消息队列": "queue", "队列": "queue", "前端": "frontend", "后端": "backend",
	"部署": "deployment", "监控": "monitoring", "日志": "logging", "测试": "testing", "持续集成": "ci", "搜索": "search",
	"存储": "storage", "认证": "auth", "鉴权": "auth", "容器编排": "orchestration", "编排": "orchestration",
	"版本控制": "vcs", "网关": "gateway", "配置": "config", "配置管理": "config", "构建": "build", "打包": "build",
}
