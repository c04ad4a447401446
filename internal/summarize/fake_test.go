package summarize

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/pkg/memory"
)

// fakeChat records requests and answers them with answer, or by default with "partial(first-
// last)" naming the first and last entry ids of a map call and "merged[…]" listing the partials
// of a reduce call.
type fakeChat struct {
	mu     sync.Mutex
	reqs   []llm.Request
	answer func(req llm.Request) (string, error)
}

func (f *fakeChat) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	answer := defaultAnswer
	if f.answer != nil {
		answer = f.answer
	}
	content, err := answer(req)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Response{
		Content:  content,
		Usage:    memory.Usage{Calls: 1, InputTokens: 10, OutputTokens: 3},
		Model:    "fake",
		Attempts: 1,
	}, nil
}

// requests returns the recorded requests with the given purpose.
func (f *fakeChat) requests(purpose string) []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []llm.Request
	for _, r := range f.reqs {
		if r.Purpose == purpose {
			out = append(out, r)
		}
	}
	return out
}

var (
	idRE      = regexp.MustCompile(`id-(\d{3})`)
	partialRE = regexp.MustCompile(`partial\(id-\d{3}-id-\d{3}\)`)
)

func defaultAnswer(req llm.Request) (string, error) {
	msg := userMessage(req)
	switch req.Purpose {
	case PurposeMap:
		ids := idRE.FindAllString(msg, -1)
		if len(ids) == 0 {
			return "partial(none)", nil
		}
		return fmt.Sprintf("partial(%s-%s)", ids[0], ids[len(ids)-1]), nil
	case PurposeReduce:
		return "merged[" + strings.Join(partialRE.FindAllString(msg, -1), " ") + "]", nil
	}
	return "", fmt.Errorf("unexpected purpose %q", req.Purpose)
}

// userMessage returns the content of the request's user message.
func userMessage(req llm.Request) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// systemMessage returns the content of the request's system message.
func systemMessage(req llm.Request) string {
	for _, m := range req.Messages {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// englishSession returns n conversation entries alternating user and assistant, each naming
// its id ("id-001", …).
func englishSession(n int) []memory.Entry {
	entries := make([]memory.Entry, n)
	for i := range entries {
		role := "user"
		text := fmt.Sprintf("id-%03d: I would like to plan trip number %d to Lisbon with my sister Maria.", i+1, i+1)
		if i%2 == 1 {
			role = "assistant"
			text = fmt.Sprintf("id-%03d: Sure, trip %d to Lisbon sounds great; I will note that Maria joins.", i+1, i+1)
		}
		entries[i] = turn(i, role, text)
	}
	return entries
}

// chineseSession returns n Chinese conversation entries, each naming its id.
func chineseSession(n int) []memory.Entry {
	entries := make([]memory.Entry, n)
	for i := range entries {
		role := "user"
		text := fmt.Sprintf("id-%03d：我喜欢用Go写后端服务，下周三要在杭州见客户王经理，第%d次会议。", i+1, i+1)
		if i%2 == 1 {
			role = "assistant"
			text = fmt.Sprintf("id-%03d：好的，我记下了：第%d次会议在杭州，和王经理见面，需要准备演示。", i+1, i+1)
		}
		entries[i] = turn(i, role, text)
	}
	return entries
}

func turn(i int, role, text string) memory.Entry {
	return memory.Entry{
		ID:        fmt.Sprintf("t%03d", i+1),
		Type:      memory.TypeForRole(role),
		Role:      role,
		Content:   text,
		Timestamp: t0.Add(time.Duration(i) * time.Minute),
		Tokens:    memory.Estimate(text),
	}
}

// wordCounter counts a token per space-separated word and per Han character: a counter other
// than the estimate, to show that nothing depends on the estimate's arithmetic.
type wordCounter struct{}

func (wordCounter) Count(text string) int {
	n := 0
	for _, f := range strings.Fields(text) {
		han := 0
		for _, r := range f {
			if r >= 0x4E00 && r <= 0x9FFF {
				han++
			}
		}
		if han < utf8.RuneCountInString(f) {
			n++
		}
		n += han
	}
	return n
}

func (wordCounter) Name() string { return "words" }

// lineCounter makes line breaks expensive, so that joining sentences costs more than their
// parts: the extractor must check the rendering, not trust the sum of its parts.
type lineCounter struct{}

func (lineCounter) Count(text string) int {
	return (utf8.RuneCountInString(text)+2)/3 + 10*strings.Count(text, "\n")
}

func (lineCounter) Name() string { return "lines" }

var counters = []memory.Counter{memory.EstimateCounter{}, wordCounter{}, lineCounter{}}
