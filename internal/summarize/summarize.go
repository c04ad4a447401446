package summarize

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Chat is what the summariser needs of an LLM (satisfied by *llm.Client).
type Chat interface {
	Complete(ctx context.Context, req llm.Request) (llm.Response, error)
}

var _ Chat = (*llm.Client)(nil)

// Errors of Summarize.
var (
	// ErrNoEntries is returned for an empty list of entries.
	ErrNoEntries = errors.New("summarize: no entries")
	// ErrCap is returned when the token cap cannot hold the marker and some text.
	ErrCap = errors.New("summarize: token cap too small")
	// ErrEmptyAnswer is wrapped in the error of a call whose answer held no summary.
	ErrEmptyAnswer = errors.New("summarize: empty answer")
)

// Purposes of the LLM calls, as llm.Request.Purpose.
const (
	PurposeMap    = "map"
	PurposeReduce = "reduce"
)

// minPartialTokens is the smallest cap of a map call's partial summary, however many groups
// share the cap: below it a partial summary cannot say much about five entries.
const minPartialTokens = 100

// Summarizer compresses a session's oldest entries into one summary by Map-Reduce, with an LLM
// or, without one, extractively. It is safe for concurrent use.
type Summarizer struct {
	cfg   Config
	chat  Chat
	model string
}

// New returns a summariser that uses chat, or the extractive summariser when chat is nil (a nil
// pointer in the interface counts as nil). model names the LLM in Result.Summarizer. Zero fields
// of cfg take their defaults, negative ones too (Config.Validate reports those). It never fails.
func New(cfg Config, chat Chat, model string) *Summarizer {
	if isNil(chat) {
		chat = nil
	}
	return &Summarizer{cfg: cfg.withDefaults(), chat: chat, model: model}
}

// isNil reports whether c is nil or holds a nil pointer (a *llm.Client left unset).
func isNil(c Chat) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Name returns what Result.Summarizer says: "llm:<model>" ("llm" without a model name) with an
// LLM, "extractive" without one.
func (s *Summarizer) Name() string {
	switch {
	case s.chat == nil:
		return "extractive"
	case s.model == "":
		return "llm"
	default:
		return "llm:" + s.model
	}
}

// Result is the outcome of one compression.
type Result struct {
	// Content starts with the marker: "[历史对话摘要] " for Chinese, "[Conversation summary] "
	// otherwise.
	Content string
	// Language is "zh" or "en" (see Language).
	Language string
	// Summarizer is "llm:<model>" or "extractive".
	Summarizer string
	// Usage is summed over every LLM call; Calls is the number of calls (0 when extractive).
	Usage memory.Usage
	// MapCalls and ReduceCalls count the LLM calls of each step (0 when extractive).
	MapCalls, ReduceCalls int
}

// group is a run of consecutive entries summarised together.
type group struct {
	first, end int // entries[first:end]
	cap        int // tokens of its partial summary
}

// Summarize compresses entries (in arrival order; the previous summary, of type Summary, may be
// first and is carried forward) into one summary of at most maxTokens tokens by cfg.Counter,
// marker included.
//
// The entries are formatted one after another with position, time, role (and tool name) and text,
// tool results cut to ToolHeadChars+ToolTailChars characters and conversation to
// ConversationChars, and split in arrival order into groups of GroupSize. Map: each group is
// summarised by one LLM call, at most Concurrency at a time; the partial summaries keep the
// groups' order. Reduce: when there is more than one group, one more call merges the partials; a
// single partial is used as it is. So n entries make exactly ceil(n/GroupSize) map calls, plus
// one reduce call when n > GroupSize. An answer that overruns the cap is cut with Extractive.
//
// Each map call is asked for at most its group's share of the cap: the cap (less the marker)
// split in proportion to the groups' formatted token counts, so that the partials together are
// about as long as the summary that the reduce call writes; but never less than 100 tokens
// (when many groups share the cap, the reduce call gets more to choose from than it can keep)
// and never more than the cap. A single group gets the whole cap.
//
// Without an LLM the same steps run with Extractive: each group's best sentences within its
// share, then the best of those within the cap, each line behind its role label. The user's
// sentences weigh twice the assistant's and four times a tool's (see assistantWeight); repeated
// lines are kept once. No calls are made, and Usage and the call counts are zero.
//
// It fails with ErrNoEntries for no entries, with ErrCap when maxTokens cannot hold the marker
// and a token of text, with ctx's error when ctx is done, and with the wrapped error of the
// first LLM call that failed (ErrEmptyAnswer when an answer was empty); it returns no partial
// result, and leaves retrying to the caller.
func (s *Summarizer) Summarize(ctx context.Context, entries []memory.Entry, maxTokens int) (Result, error) {
	if len(entries) == 0 {
		return Result{}, ErrNoEntries
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("summarize: %w", err)
	}
	lang := Language(entries)
	marker := Marker(lang)
	body := maxTokens - s.cfg.Counter.Count(marker)
	if body < 1 {
		return Result{}, fmt.Errorf("%w: %d tokens cannot hold the marker %q and any text", ErrCap, maxTokens, marker)
	}
	groups := s.groups(entries, body)
	res := Result{Language: lang, Summarizer: s.Name()}
	if s.chat == nil {
		var parts []unit
		for _, g := range groups {
			var units []unit
			for _, e := range entries[g.first:g.end] {
				units = append(units, s.entryUnits(e)...)
			}
			parts = append(parts, selectUnits(units, g.cap, s.cfg.Counter)...)
		}
		res.Content = s.fit(marker, parts, maxTokens)
		return res, nil
	}

	partials, usage, err := s.mapGroups(ctx, lang, entries, groups)
	if err != nil {
		return Result{}, err
	}
	res.MapCalls, res.Usage = len(groups), usage
	text := partials[0]
	if len(partials) > 1 {
		resp, err := s.chat.Complete(ctx, llm.Request{
			Messages: []llm.Message{
				{Role: "system", Content: systemPrompt(lang, stepReduce)},
				{Role: "user", Content: reduceMessage(lang, partials, body)},
			},
			MaxTokens: answerTokens(body),
			Purpose:   PurposeReduce,
		})
		if err == nil {
			if text = cleanAnswer(resp.Content); text == "" {
				err = ErrEmptyAnswer
			}
		}
		if err != nil {
			return Result{}, fmt.Errorf("summarize: reduce call: %w", err)
		}
		res.ReduceCalls = 1
		res.Usage = res.Usage.Add(resp.Usage)
	}
	res.Usage.Calls = res.MapCalls + res.ReduceCalls
	if content := marker + text; s.cfg.Counter.Count(content) <= maxTokens {
		res.Content = content
	} else {
		res.Content = s.fit(marker, textUnits(text), maxTokens)
	}
	return res, nil
}

// groups splits entries into groups of GroupSize and shares the body cap out among them.
func (s *Summarizer) groups(entries []memory.Entry, body int) []group {
	size := s.cfg.GroupSize
	groups := make([]group, 0, (len(entries)+size-1)/size)
	tokens := make([]int, 0, cap(groups))
	total := 0
	for first := 0; first < len(entries); first += size {
		g := group{first: first, end: min(first+size, len(entries))}
		t := 0
		for _, e := range entries[g.first:g.end] {
			t += s.cfg.Counter.Count(s.entryText(e))
		}
		groups = append(groups, g)
		tokens = append(tokens, t)
		total += t
	}
	for i := range groups {
		share := body / len(groups)
		if total > 0 {
			share = int(int64(body) * int64(tokens[i]) / int64(total))
		}
		groups[i].cap = min(max(share, minPartialTokens), body)
	}
	return groups
}

// mapGroups makes the map calls, at most Concurrency at a time, and returns the partial
// summaries in group order with the calls' summed usage. The first failure cancels the calls
// still running and is returned.
func (s *Summarizer) mapGroups(ctx context.Context, lang string, entries []memory.Entry, groups []group) ([]string, memory.Usage, error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := len(groups)
	partials := make([]string, n)
	usages := make([]memory.Usage, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		launched int
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	sem := make(chan struct{}, s.cfg.Concurrency)
launch:
	for i, g := range groups {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break launch
		}
		launched++
		req := s.mapRequest(lang, entries, g)
		wg.Go(func() {
			defer func() { <-sem }()
			resp, err := s.chat.Complete(ctx, req)
			if err == nil {
				if partials[i] = cleanAnswer(resp.Content); partials[i] == "" {
					err = ErrEmptyAnswer
				}
			}
			if err != nil {
				fail(fmt.Errorf("summarize: map call %d of %d: %w", i+1, n, err))
				return
			}
			usages[i] = resp.Usage
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, memory.Usage{}, firstErr
	}
	if launched < n {
		return nil, memory.Usage{}, fmt.Errorf("summarize: map calls: %w", context.Cause(parent))
	}
	var total memory.Usage
	for _, u := range usages {
		total = total.Add(u)
	}
	return partials, total, nil
}

// mapRequest is the map call of group g.
func (s *Summarizer) mapRequest(lang string, entries []memory.Entry, g group) llm.Request {
	lines := make([]string, 0, g.end-g.first)
	for i := g.first; i < g.end; i++ {
		lines = append(lines, s.formatEntry(i+1, entries[i]))
	}
	carries := g.first == 0 && entries[0].Type == memory.Summary
	return llm.Request{
		Messages: []llm.Message{
			{Role: "system", Content: systemPrompt(lang, stepMap)},
			{Role: "user", Content: mapMessage(lang, lines, g.first+1, g.end, len(entries), carries, g.cap)},
		},
		MaxTokens: answerTokens(g.cap),
		Purpose:   PurposeMap,
	}
}

// answerTokens bounds an answer asked to be at most limit tokens. The bound is generous: real
// tokenizers count Chinese at up to twice the estimate, and an answer that overruns is cut
// afterwards, sentence by sentence, which beats one cut mid-sentence by the server.
func answerTokens(limit int) int { return 2*limit + 256 }

// Weights of the sentences of an entry in the extractive summary, relative to the user's. The
// user's own words carry the facts about the user; the assistant's answers are long and repeat
// the terms the user brought up, so by term frequency alone they crowd the user out; tool
// output is mostly noise. On LongMemEval-S (dev), compressing the sessions that hold evidence to
// a quarter of their tokens keeps a sentence of 52 % of the evidence turns with the assistant
// at weight 1, 79 % at 0.75 and 94 % at 0.5 (the assistant's evidence turns are kept at every
// weight: the assistant's text still fills most of the cap).
const (
	assistantWeight = 0.5
	toolWeight      = 0.5
)

// entryUnits returns the units Extractive works on for entry e: the lines of an earlier summary,
// or the entry as one unit behind its label.
func (s *Summarizer) entryUnits(e memory.Entry) []unit {
	var u unit
	switch {
	case e.Type == memory.Summary:
		return textUnits(stripMarker(e.Content))
	case isTool(e):
		label, command, output := toolParts(e, s.cfg.ToolHeadChars, s.cfg.ToolTailChars)
		u.label, u.weight = label, toolWeight
		if command != "" {
			u.sents = append(u.sents, command)
		}
		u.sents = splitSentences(output, u.sents)
	default:
		head, tail := s.cfg.conversationCut()
		u.label = roleLabel(e)
		if e.Role != "user" && e.Type == memory.Conversation {
			u.weight = assistantWeight
		}
		u.sents = splitSentences(cutMiddle(strings.TrimSpace(e.Content), head, tail), nil)
	}
	if len(u.sents) == 0 {
		return nil
	}
	return []unit{u}
}

// fit returns marker followed by the best of units that fits maxTokens with it. The marker
// alone must fit.
func (s *Summarizer) fit(marker string, units []unit, maxTokens int) string {
	limit := maxTokens - s.cfg.Counter.Count(marker)
	for {
		content := marker + render(selectUnits(units, limit, s.cfg.Counter))
		over := s.cfg.Counter.Count(content) - maxTokens
		if over <= 0 || limit < 1 {
			return content
		}
		limit -= over
	}
}

var (
	thinkRE = regexp.MustCompile(`(?s)^\s*<think>.*?</think>`)
	fenceRE = regexp.MustCompile("(?s)^```[a-zA-Z]*\\n(.*)\\n```$")
)

// cleanAnswer returns the summary in an LLM answer: without a leading <think> block, a code
// fence around it, or a marker the model copied.
func cleanAnswer(s string) string {
	s = strings.TrimSpace(thinkRE.ReplaceAllString(s, ""))
	if m := fenceRE.FindStringSubmatch(s); m != nil {
		s = strings.TrimSpace(m[1])
	}
	return stripMarker(s)
}
