// Package when finds the period of time a query asks about: "four weeks ago", "in the past
// month", "last Saturday", "yesterday", "in December", "上个月", "三天前", "上周六". The
// retriever measures an entry's time decay from the end of that period instead of from the
// query's "at" (docs/retrieval.md): a question about last Saturday favours what was said last
// Saturday as a question about now favours what was said today.
//
// A period is found from the query's words alone, relative to "at", in English and Chinese.
// It is deliberately wide (a week ago covers five to nine days back): the words are
// approximate, and an entry's time is when it was said, not when what it tells happened. A
// query with no such words, or with several that disagree, has no period.
package when

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Period is a span of time [From, To].
type Period struct {
	From, To time.Time
}

// Contains reports whether t is within p.
func (p Period) Contains(t time.Time) bool { return !t.Before(p.From) && !t.After(p.To) }

const day = 24 * time.Hour

var numbers = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2,
	"few": 3, "a few": 3, "several": 4,
	"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
	"几": 3, "半": 0, // 半 is handled apart (half a month, half a year)
}

// maxCount bounds a count of units: 200 years still fit in a time.Duration.
const maxCount = 200

// count reads a number written in digits or words, lower case ("", as in "a week ago" without
// "a", is 1).
func count(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 1, true
	}
	if n, err := strconv.Atoi(s); err == nil {
		return n, n > 0 && n <= maxCount
	}
	if n, ok := numbers[s]; ok {
		return n, n > 0
	}
	return chineseCount(s)
}

// chineseCount reads a Chinese number of up to three characters: 十五 15, 二十 20, 二十五 25,
// 十几 13 (几: a few).
func chineseCount(s string) (int, bool) {
	tens, units, seenTen := 0, 0, false
	for _, r := range s {
		switch {
		case r == '十':
			if seenTen {
				return 0, false
			}
			seenTen, tens, units = true, max(units, 1), 0
		default:
			n, ok := numbers[string(r)]
			if !ok || (n == 0 && r != '半') {
				return 0, false
			}
			units = n
		}
	}
	n := tens*10 + units
	return n, n > 0 && n <= maxCount
}

// unitLength is a unit's approximate length (unit in lower case, as near leaves it).
func unitLength(unit string) time.Duration {
	switch strings.TrimSuffix(unit, "s") {
	case "day", "天", "日":
		return day
	case "week", "周", "星期", "礼拜":
		return 7 * day
	case "month", "月":
		return 30 * day
	case "year", "年":
		return 365 * day
	}
	return 0
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"日": time.Sunday, "天": time.Sunday, "一": time.Monday, "二": time.Tuesday, "三": time.Wednesday,
	"四": time.Thursday, "五": time.Friday, "六": time.Saturday,
}

var months = map[string]time.Month{
	"january": time.January, "february": time.February, "march": time.March, "april": time.April,
	"may": time.May, "june": time.June, "july": time.July, "august": time.August,
	"september": time.September, "october": time.October, "november": time.November, "december": time.December,
}

const num = `(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|couple of|a few|few|several)`
const cnum = `(\d+|[一两二三四五六七八九十几]{1,3})`

var (
	// "four weeks ago", "a month ago", "2 days ago"
	agoEN = regexp.MustCompile(`\b` + num + `\s+(day|week|month|year)s?\s+ago\b`)
	// "in the past month", "over the last few weeks", "the past 3 days", "last month"
	pastEN = regexp.MustCompile(`\b(?:past|last|previous)\s+(?:` + num + `\s+)?(day|week|weekend|month|year)s?\b`)
	// "last Saturday", "this past Friday" (not "on Saturdays", "on Saturday mornings": a habit)
	weekdayEN = regexp.MustCompile(`\b(?:last|this past|past)\s+(sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b`)
	// "yesterday", "today", "the day before yesterday", "this week", "this month" (not "before
	// today" nor "until today": all of the past)
	simpleEN = regexp.MustCompile(`(\bbefore\s+|\buntil\s+|\btill\s+)?\b(the day before yesterday|yesterday|last night|today|tonight|this morning|this week|this month|this year)\b`)
	// "in December", "in early March", "during May", "in March and April"
	monthEN = regexp.MustCompile(`\b(?:in|during|of|and|between|from)\s+(?:early\s+|late\s+|mid-?\s*)?(january|february|march|april|may|june|july|august|september|october|november|december)\b`)

	// "三天前", "两周前", "一个月前", "两个星期以前"
	agoZH = regexp.MustCompile(cnum + `(?:个)?(天|日|周|星期|礼拜|月|年)(?:以|之)?前`)
	// "过去一个月", "最近两周", "近三天", "过去几个月"
	pastZH = regexp.MustCompile(`(?:过去|最近|近)的?` + cnum + `?(?:个)?(天|周|星期|礼拜|月|年)`)
	// "上周六", "上星期五", "上个礼拜天"
	weekdayZH = regexp.MustCompile(`上个?(?:周|星期|礼拜)([一二三四五六日天])`)
	// "昨天", "前天", "今天", "上周", "上个月", "去年", "这周", "本月", "今年"
	simpleZH = regexp.MustCompile(`(大前天|前天|昨天|昨晚|今天|今晚|上个?(?:周|星期|礼拜)|上个?月|去年|这个?(?:周|星期|礼拜)|本周|这个?月|本月|今年)`)
	// "十二月", "3月"
	monthZH = regexp.MustCompile(`(\d{1,2}|十[一二]?|[一二三四五六七八九])月份?`)
)

// startOfDay is the midnight that starts t's day, in t's location.
func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// ago is the period around n units before at: from 1.5 to 0.5 units of the unit's length
// either side of it for a count of 1, and ±30 % of the span for a larger count, at least a day.
func ago(at time.Time, n int, unit time.Duration) Period {
	span := time.Duration(n) * unit
	slack := max(span*3/10, day)
	if n == 1 {
		slack = max(unit/2, day)
	}
	return Period{From: at.Add(-span - slack), To: at.Add(-span + slack)}
}

// past is the period from n units before at (a little more: a month ago may be 31 days) to at.
func past(at time.Time, n int, unit time.Duration) Period {
	span := time.Duration(n) * unit
	return Period{From: startOfDay(at.Add(-span - span/10)), To: at}
}

// lastWeekday is the period of the most recent given weekday strictly before at's day (±1 day).
func lastWeekday(at time.Time, wd time.Weekday) Period {
	back := int(at.Weekday()-wd+7) % 7
	if back == 0 {
		back = 7
	}
	d := startOfDay(at).AddDate(0, 0, -back)
	return Period{From: d.Add(-day), To: d.Add(2 * day)}
}

// lastMonth is the period of the most recent month m at or before at's month.
func lastMonth(at time.Time, m time.Month) Period {
	y := at.Year()
	if m > at.Month() {
		y--
	}
	start := time.Date(y, m, 1, 0, 0, 0, 0, at.Location())
	return Period{From: start.Add(-3 * day), To: start.AddDate(0, 1, 3)}
}

// triggers are the words without which no pattern matches (ASCII ones lower case): Find runs the
// patterns only near them, so that a long query without time words costs a few substring
// searches.
var triggers = []string{"ago", "past", "last", "previous", "yesterday", "today", "tonight", "this ",
	"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
	"november", "december",
	"天前", "日前", "周前", "期前", "拜前", "月前", "年前", "以前", "之前", "过去", "最近",
	"上周", "上个", "上星", "上礼", "上月", "前天", "昨", "今天", "今晚", "今年", "去年", "这周", "这个",
	"这星", "这礼", "这月", "本周", "本月", "0月", "1月", "2月", "3月", "4月", "5月", "6月", "7月", "8月",
	"9月", "一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月"}

func init() {
	for _, n := range "一两二三四五六七八九十几" {
		triggers = append(triggers, "近"+string(n))
	}
}

// reach is how far, in bytes, from a trigger a pattern may start or end.
const reach = 40

// near returns the parts of query within reach of a trigger, ASCII letters in lower case, merged
// where they overlap and joined by newlines ("" when query holds no trigger), and whether an
// English and a Chinese trigger were found.
func near(query string) (text string, en, zh bool) {
	lower := []byte(query)
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
	}
	type span struct{ from, to int }
	var spans []span
	for _, t := range triggers {
		for off := 0; ; {
			i := bytes.Index(lower[off:], []byte(t))
			if i < 0 {
				break
			}
			i += off
			spans = append(spans, span{max(0, i-reach), min(len(query), i+len(t)+reach)})
			if t[0] < utf8.RuneSelf {
				en = true
			} else {
				zh = true
			}
			off = i + len(t)
		}
	}
	if len(spans) == 0 {
		return "", false, false
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var out strings.Builder
	cur := spans[0]
	flush := func() {
		from, to := cur.from, cur.to
		for from > 0 && !utf8.RuneStart(query[from]) {
			from--
		}
		for to < len(query) && !utf8.RuneStart(query[to]) {
			to++
		}
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		out.Write(lower[from:to])
	}
	for _, s := range spans[1:] {
		if s.from <= cur.to {
			cur.to = max(cur.to, s.to)
			continue
		}
		flush()
		cur = s
	}
	flush()
	return out.String(), en, zh
}

// Find returns the period query asks about, relative to at, and whether it names one.
func Find(query string, at time.Time) (Period, bool) {
	query, en, zh := near(query)
	var found []Period
	if en {
		found = english(query, at, found)
	}
	if zh {
		found = chinese(query, at, found)
	}
	return span(found, at)
}

// english appends the periods of the English phrases of query (lower case) to found.
func english(query string, at time.Time, found []Period) []Period {
	add := func(p Period) { found = append(found, p) }
	for _, m := range agoEN.FindAllStringSubmatch(query, -1) {
		if n, ok := count(m[1]); ok {
			add(ago(at, n, unitLength(m[2])))
		}
	}
	for _, m := range pastEN.FindAllStringSubmatch(query, -1) {
		n, ok := count(m[1])
		if !ok {
			continue
		}
		if m[2] == "weekend" {
			// "last weekend": the most recent Saturday and Sunday before at's day.
			p := lastWeekday(at, time.Saturday)
			p.To = p.To.Add(day)
			add(p)
			continue
		}
		add(past(at, n, unitLength(m[2])))
	}
	for _, m := range weekdayEN.FindAllStringSubmatch(query, -1) {
		add(lastWeekday(at, weekdays[m[1]]))
	}
	for _, m := range simpleEN.FindAllStringSubmatch(query, -1) {
		if m[1] == "" {
			add(simple(at, m[2]))
		}
	}
	for _, m := range monthEN.FindAllStringSubmatch(query, -1) {
		add(lastMonth(at, months[m[1]]))
	}
	return found
}

// chinese appends the periods of the Chinese phrases of query to found.
func chinese(query string, at time.Time, found []Period) []Period {
	add := func(p Period) { found = append(found, p) }
	for _, m := range agoZH.FindAllStringSubmatch(query, -1) {
		if n, ok := count(m[1]); ok {
			add(ago(at, n, unitLength(m[2])))
		}
	}
	for _, m := range pastZH.FindAllStringSubmatch(query, -1) {
		if n, ok := count(m[1]); ok {
			add(past(at, n, unitLength(m[2])))
		}
	}
	zhWeekday := weekdayZH.FindAllStringSubmatch(query, -1)
	for _, m := range zhWeekday {
		add(lastWeekday(at, weekdays[m[1]]))
	}
	if len(zhWeekday) == 0 {
		for _, m := range simpleZH.FindAllStringSubmatch(query, -1) {
			add(simple(at, m[1]))
		}
	}
	for _, m := range monthZH.FindAllStringSubmatch(query, -1) {
		if mo := zhMonth(m[1]); mo > 0 {
			add(lastMonth(at, mo))
		}
	}
	return found
}

// span is the period of the periods found: their span when they overlap or touch ("last week,
// on Saturday"), none when they are apart ("between March and the day before yesterday" asks
// about two times).
func span(found []Period, at time.Time) (Period, bool) {
	if len(found) == 0 {
		return Period{}, false
	}
	p := found[0]
	for _, q := range found[1:] {
		if q.From.After(p.To.Add(day)) || p.From.After(q.To.Add(day)) {
			return Period{}, false
		}
		p = Period{From: minTime(p.From, q.From), To: maxTime(p.To, q.To)}
	}
	if p.To.After(at) {
		p.To = at
	}
	return p, p.From.Before(p.To)
}

func simple(at time.Time, w string) Period {
	today := startOfDay(at)
	switch w {
	case "today", "tonight", "this morning", "今天", "今晚":
		return Period{From: today, To: at}
	case "yesterday", "昨天", "昨晚":
		return Period{From: today.Add(-day), To: today}
	case "last night":
		return Period{From: today.Add(-day / 2), To: today.Add(day / 4)}
	case "the day before yesterday", "前天":
		return Period{From: today.Add(-2 * day), To: today.Add(-day)}
	case "大前天":
		return Period{From: today.Add(-3 * day), To: today.Add(-2 * day)}
	case "this week", "这周", "这个周", "这星期", "这个星期", "这礼拜", "这个礼拜", "本周":
		return past(at, 7, day)
	case "this month", "这月", "这个月", "本月":
		return Period{From: time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, at.Location()), To: at}
	case "this year", "今年":
		return Period{From: time.Date(at.Year(), 1, 1, 0, 0, 0, 0, at.Location()), To: at}
	case "去年":
		return Period{From: time.Date(at.Year()-1, 1, 1, 0, 0, 0, 0, at.Location()), To: time.Date(at.Year(), 1, 1, 0, 0, 0, 0, at.Location())}
	}
	if strings.HasPrefix(w, "上") {
		if strings.HasSuffix(w, "月") {
			return ago(at, 1, 30*day)
		}
		return ago(at, 1, 7*day)
	}
	return Period{}
}

func zhMonth(s string) time.Month {
	if n, err := strconv.Atoi(s); err == nil {
		if n >= 1 && n <= 12 {
			return time.Month(n)
		}
		return 0
	}
	switch s {
	case "十":
		return 10
	case "十一":
		return 11
	case "十二":
		return 12
	}
	if n, ok := numbers[s]; ok && n >= 1 && n <= 9 {
		return time.Month(n)
	}
	return 0
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
