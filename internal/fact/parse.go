package fact

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrMalformed is wrapped by every error of [Parse]: the LLM's answer is not the extraction
// object [Prompt] asked for. Retrying the same call may help; the answer itself is permanent.
var ErrMalformed = errors.New("fact: malformed extraction answer")

// Parse reads the LLM's answer to a [Prompt] for the same turns, strictly. The answer must be
// one JSON object {"facts":[{"content","category","key","confidence","turns"}]}, optionally
// inside a ```json fence and after a <think>…</think> block (reasoning models). Unknown fields
// are ignored.
//
// Every fact needs a non-empty content and a category among the Category constants (case is
// folded; anything else is an error, not "other"); key is optional and, when given, a slot of
// lower-case ASCII segments joined by dots ("user.city"); confidence is clamped to [0, 1] and
// is 0.5 when missing; turn ids not among turns are dropped, and when none is left the
// provenance is every user turn given (every turn when there is none). Facts with the same
// normalised content are merged as in [Rules].
//
// A malformed answer of any kind gives an error wrapping [ErrMalformed] and no candidates,
// never some of them. {"facts":[]} gives none and no error.
func Parse(answer string, turns []Turn) ([]Candidate, error) {
	body, err := unwrap(answer)
	if err != nil {
		return nil, err
	}
	var a struct {
		Facts *[]*struct {
			Content    *string  `json:"content"`
			Category   *string  `json:"category"`
			Key        *string  `json:"key"`
			Confidence *float64 `json:"confidence"`
			Turns      []string `json:"turns"`
		} `json:"facts"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if a.Facts == nil {
		return nil, fmt.Errorf("%w: no \"facts\" array", ErrMalformed)
	}

	known := make(map[string]bool, len(turns))
	var fallback []string
	for _, t := range turns {
		known[t.ID] = true
		if strings.EqualFold(strings.TrimSpace(t.Role), "user") {
			fallback = append(fallback, t.ID)
		}
	}
	if len(fallback) == 0 {
		for _, t := range turns {
			fallback = append(fallback, t.ID)
		}
	}

	m := newMerger(turns)
	for i, f := range *a.Facts {
		if f == nil {
			return nil, fmt.Errorf("%w: facts[%d] is null", ErrMalformed, i)
		}
		if f.Content == nil || strings.TrimSpace(*f.Content) == "" {
			return nil, fmt.Errorf("%w: facts[%d]: empty content", ErrMalformed, i)
		}
		if f.Category == nil {
			return nil, fmt.Errorf("%w: facts[%d]: no category", ErrMalformed, i)
		}
		category := strings.ToLower(strings.TrimSpace(*f.Category))
		if !ValidCategory(category) {
			return nil, fmt.Errorf("%w: facts[%d]: unknown category %q", ErrMalformed, i, *f.Category)
		}
		key := ""
		if f.Key != nil {
			key = strings.ToLower(strings.TrimSpace(*f.Key))
			if key != "" && !reKey.MatchString(key) {
				return nil, fmt.Errorf("%w: facts[%d]: bad key %q", ErrMalformed, i, *f.Key)
			}
		}
		confidence := 0.5
		if f.Confidence != nil {
			confidence = min(max(*f.Confidence, 0), 1)
		}
		var provenance []string
		for _, id := range f.Turns {
			if known[id] {
				provenance = append(provenance, id)
			}
		}
		if len(provenance) == 0 {
			provenance = fallback
		}
		m.add(Candidate{
			Content:    strings.TrimSpace(*f.Content),
			Category:   category,
			Key:        key,
			Confidence: confidence,
			Provenance: provenance,
		})
	}
	return m.result(), nil
}

var (
	reKey   = regexp.MustCompile(`^[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)+$`)
	reThink = regexp.MustCompile(`(?s)^<think>.*?</think>`)
)

// unwrap strips white space, a leading <think>…</think> block and a ``` or ```json fence.
func unwrap(answer string) (string, error) {
	s := strings.TrimSpace(answer)
	s = strings.TrimSpace(reThink.ReplaceAllString(s, ""))
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			return "", fmt.Errorf("%w: unterminated code fence", ErrMalformed)
		}
		if lang := strings.TrimSpace(rest[:nl]); lang != "" && !strings.EqualFold(lang, "json") {
			return "", fmt.Errorf("%w: code fence of %q, not json", ErrMalformed, lang)
		}
		body, ok := strings.CutSuffix(strings.TrimSpace(rest[nl+1:]), "```")
		if !ok {
			return "", fmt.Errorf("%w: unterminated code fence", ErrMalformed)
		}
		s = strings.TrimSpace(body)
	}
	if s == "" {
		return "", fmt.Errorf("%w: empty answer", ErrMalformed)
	}
	return s, nil
}
