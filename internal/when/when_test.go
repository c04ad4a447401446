package when

import (
	"strings"
	"testing"
	"time"
)

// at is a Wednesday afternoon.
var at = time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)

func date(m time.Month, d int) time.Time { return time.Date(2026, m, d, 12, 0, 0, 0, time.UTC) }

// TestFind: each phrase finds a period that holds the day it means and not a day it does not.
func TestFind(t *testing.T) {
	tests := []struct {
		query   string
		in, out []time.Time
	}{
		{"What did I buy last Saturday?", []time.Time{date(11, 28)}, []time.Time{date(11, 21), date(12, 2)}},
		{"What business milestone did I mention four weeks ago?", []time.Time{date(11, 4), date(10, 30)}, []time.Time{date(11, 25), date(9, 20)}},
		{"a month ago", []time.Time{date(11, 2)}, []time.Time{date(12, 1), date(9, 1)}},
		{"How many art events did I attend in the past month?", []time.Time{date(11, 5), date(12, 1)}, []time.Time{date(10, 1)}},
		{"over the last 3 days", []time.Time{date(11, 30)}, []time.Time{date(11, 20)}},
		{"in the last few months", []time.Time{date(9, 15)}, []time.Time{date(6, 1)}},
		{"What game did I beat last weekend?", []time.Time{date(11, 28), date(11, 29)}, []time.Time{date(11, 25), date(12, 2)}},
		{"what did we talk about yesterday", []time.Time{date(12, 1)}, []time.Time{date(11, 30), at}},
		{"the day before yesterday", []time.Time{date(11, 30)}, []time.Time{date(12, 1)}},
		{"this week", []time.Time{date(11, 27)}, []time.Time{date(11, 20)}},
		{"in December", []time.Time{date(12, 1)}, []time.Time{date(11, 20)}},
		{"Which airline did I fly with in October and November?", []time.Time{date(10, 10), date(11, 20)}, []time.Time{date(9, 10)}},
		{"what did I do in May", []time.Time{date(5, 15)}, []time.Time{date(7, 1)}},
		{"我上周六买了什么？", []time.Time{date(11, 28)}, []time.Time{date(11, 21)}},
		{"我三天前说了什么", []time.Time{date(11, 29)}, []time.Time{date(11, 20)}},
		{"两个星期以前的会议", []time.Time{date(11, 18)}, []time.Time{date(12, 1)}},
		{"过去一个月我去了哪些地方", []time.Time{date(11, 10)}, []time.Time{date(10, 1)}},
		{"昨天吃了什么", []time.Time{date(12, 1)}, []time.Time{date(11, 29)}},
		{"上个月的旅行", []time.Time{date(11, 2)}, []time.Time{date(9, 1)}},
		{"十月份的账单", []time.Time{date(10, 15)}, []time.Time{date(11, 15)}},
		{"二十天前的聚会", []time.Time{date(11, 12)}, []time.Time{date(11, 25), date(10, 20)}},
		{"十五天前", []time.Time{date(11, 17)}, []time.Time{date(11, 28)}},
		{"What did I eat last night?", []time.Time{time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)}, []time.Time{time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), date(11, 30)}},
	}
	for _, tt := range tests {
		p, ok := Find(tt.query, at)
		if !ok {
			t.Errorf("%q: no period", tt.query)
			continue
		}
		if p.To.After(at) {
			t.Errorf("%q: the period ends after at: %v", tt.query, p.To)
		}
		for _, d := range tt.in {
			if !p.Contains(d) {
				t.Errorf("%q: %s..%s does not hold %s", tt.query, p.From.Format(time.DateOnly), p.To.Format(time.DateOnly), d.Format(time.DateOnly))
			}
		}
		for _, d := range tt.out {
			if p.Contains(d) {
				t.Errorf("%q: %s..%s holds %s", tt.query, p.From.Format(time.DateOnly), p.To.Format(time.DateOnly), d.Format(time.DateOnly))
			}
		}
	}
}

// TestNoPeriod: a query without time words, with a habit, with "before today", or naming two
// times apart has no period.
func TestNoPeriod(t *testing.T) {
	for _, q := range []string{
		"What is my favourite colour?",
		"What time do I wake up on Saturday mornings?",
		"Which airlines did I fly with before today?",
		"How many days passed between March and yesterday?",
		"I may go hiking",
		"Last name of my manager?",
		"我喜欢什么颜色",
		"What happened 999 years ago?",
		"in the past 5000 years",
		"",
	} {
		if p, ok := Find(q, at); ok {
			t.Errorf("%q: period %s..%s", q, p.From.Format(time.DateOnly), p.To.Format(time.DateOnly))
		}
	}
}

// BenchmarkFind: a question, and a dialogue of 1,000 characters without time words (the query
// MADial-Bench sends), each searched on every retrieve.
func BenchmarkFind(b *testing.B) {
	dialogue := strings.Repeat("I got a perfect score on my math test! You must have studied really hard, right? ", 12)
	for _, q := range []struct{ name, text string }{
		{"question", "What was the significant business milestone I mentioned four weeks ago?"},
		{"dialogue", dialogue},
		{"chinese", strings.Repeat("我数学考试得了满分！你一定很努力学习吧？这道题上面写着答案。", 16)},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				Find(q.text, at)
			}
		})
	}
}

// FuzzFind: any text, a period or none, never a period ending after at or starting after its end.
func FuzzFind(f *testing.F) {
	for _, s := range []string{"last Saturday", "four weeks ago", "上周六", "三天前", "in May and June", "\xff\xfe ago", "past  weekend"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if p, ok := Find(q, at); ok && (p.To.After(at) || !p.From.Before(p.To)) {
			t.Errorf("%q: period %v..%v", q, p.From, p.To)
		}
	})
}

// TestFindInTheCallersZone: the days of a period are the days of at's zone: at 01:00 in UTC+8
// (17:00 UTC the day before), "yesterday" is the day before in UTC+8, not in UTC.
func TestFindInTheCallersZone(t *testing.T) {
	cst := time.FixedZone("UTC+8", 8*3600)
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, cst)
	p, ok := Find("what did I eat yesterday?", at)
	if !ok {
		t.Fatal("no period")
	}
	if in := time.Date(2026, 12, 1, 20, 0, 0, 0, cst); !p.Contains(in) {
		t.Errorf("yesterday %v..%v does not hold %v", p.From, p.To, in)
	}
	if out := time.Date(2026, 11, 30, 20, 0, 0, 0, cst); p.Contains(out) {
		t.Errorf("yesterday %v..%v holds %v", p.From, p.To, out)
	}
}
