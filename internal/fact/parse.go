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
// are ignored; the answer's graph ("entities" and "relations") is read by [ParseAll], and a
// malformed one is an error here too.
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
	x, err := ParseAll(answer, turns)
	return x.Facts, err
}

// Extraction is everything one answer to a [Prompt] holds: the facts, and the graph.
type Extraction struct {
	Facts []Candidate
	Graph Graph
}

// ParseAll is [Parse] that also reads the optional graph of the answer:
//
//	"entities":  [{"name", "type", "aliases": ["other name"]}]
//	"relations": [{"subject", "relation", "object", "ended", "turns"}]
//
// An entity needs a name and a type among person, place, organization, thing, event (case
// folded; "" or missing when unknown); its aliases are other names of it in the conversation.
// A relation needs a subject and a relation ("user" stands for the user), a relation that is a
// slug once spaces and hyphens become underscores ("lives in" → lives_in), and an object
// unless ended is true. Its turns are read as a fact's. An entity's provenance is every turn
// that names it (or one of its aliases); an entity no turn names is dropped. Anything else
// malformed is an error wrapping [ErrMalformed] and nothing at all, facts included.
func ParseAll(answer string, turns []Turn) (Extraction, error) {
	body, err := unwrap(answer)
	if err != nil {
		return Extraction{}, err
	}
	var a struct {
		Facts *[]*struct {
			Content    *string  `json:"content"`
			Category   *string  `json:"category"`
			Key        *string  `json:"key"`
			Confidence *float64 `json:"confidence"`
			Turns      []string `json:"turns"`
		} `json:"facts"`
		Entities []*struct {
			Name    *string  `json:"name"`
			Type    *string  `json:"type"`
			Aliases []string `json:"aliases"`
		} `json:"entities"`
		Relations []*struct {
			Subject  *string  `json:"subject"`
			Relation *string  `json:"relation"`
			Object   *string  `json:"object"`
			Ended    bool     `json:"ended"`
			Turns    []string `json:"turns"`
		} `json:"relations"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return Extraction{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if a.Facts == nil {
		return Extraction{}, fmt.Errorf("%w: no \"facts\" array", ErrMalformed)
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

	cited := func(ids []string) []string {
		var provenance []string
		for _, id := range ids {
			if known[id] {
				provenance = append(provenance, id)
			}
		}
		if len(provenance) == 0 {
			provenance = fallback
		}
		return provenance
	}
	m := newMerger(turns)
	for i, f := range *a.Facts {
		if f == nil {
			return Extraction{}, fmt.Errorf("%w: facts[%d] is null", ErrMalformed, i)
		}
		if f.Content == nil || strings.TrimSpace(*f.Content) == "" {
			return Extraction{}, fmt.Errorf("%w: facts[%d]: empty content", ErrMalformed, i)
		}
		if f.Category == nil {
			return Extraction{}, fmt.Errorf("%w: facts[%d]: no category", ErrMalformed, i)
		}
		category := strings.ToLower(strings.TrimSpace(*f.Category))
		if !ValidCategory(category) {
			return Extraction{}, fmt.Errorf("%w: facts[%d]: unknown category %q", ErrMalformed, i, *f.Category)
		}
		key := ""
		if f.Key != nil {
			key = strings.ToLower(strings.TrimSpace(*f.Key))
			if key != "" && !reKey.MatchString(key) {
				return Extraction{}, fmt.Errorf("%w: facts[%d]: bad key %q", ErrMalformed, i, *f.Key)
			}
		}
		confidence := 0.5
		if f.Confidence != nil {
			confidence = min(max(*f.Confidence, 0), 1)
		}
		m.add(Candidate{
			Content:    strings.TrimSpace(*f.Content),
			Category:   category,
			Key:        key,
			Confidence: confidence,
			Provenance: cited(f.Turns),
		})
	}

	g := newGraphBuilder(turns)
	for i, e := range a.Entities {
		if e == nil || e.Name == nil || strings.TrimSpace(*e.Name) == "" {
			return Extraction{}, fmt.Errorf("%w: entities[%d]: no name", ErrMalformed, i)
		}
		typ := ""
		if e.Type != nil {
			typ = strings.ToLower(strings.TrimSpace(*e.Type))
		}
		if !validEntityType(typ) {
			return Extraction{}, fmt.Errorf("%w: entities[%d]: unknown type %q (want person, place, organization, thing or event)", ErrMalformed, i, typ)
		}
		g.entity(*e.Name, typ)
		for j, al := range e.Aliases {
			if strings.TrimSpace(al) == "" {
				return Extraction{}, fmt.Errorf("%w: entities[%d].aliases[%d]: empty", ErrMalformed, i, j)
			}
			var prov []string
			for _, t := range turns {
				if Mentions(t.Content, al) {
					prov = append(prov, t.ID)
				}
			}
			if len(prov) > 0 {
				g.alias(al, *e.Name, prov)
			}
		}
	}
	for i, r := range a.Relations {
		if r == nil || r.Subject == nil || strings.TrimSpace(*r.Subject) == "" {
			return Extraction{}, fmt.Errorf("%w: relations[%d]: no subject", ErrMalformed, i)
		}
		if r.Relation == nil {
			return Extraction{}, fmt.Errorf("%w: relations[%d]: no relation", ErrMalformed, i)
		}
		rel, ok := NormalizeRelation(*r.Relation)
		if !ok {
			return Extraction{}, fmt.Errorf("%w: relations[%d]: relation %q is not a slug such as lives_in", ErrMalformed, i, *r.Relation)
		}
		obj := ""
		if r.Object != nil {
			obj = strings.TrimSpace(*r.Object)
		}
		if obj == "" && !r.Ended {
			return Extraction{}, fmt.Errorf("%w: relations[%d]: no object", ErrMalformed, i)
		}
		subj := strings.TrimSpace(*r.Subject)
		if IsUser(subj) {
			subj = UserName
		}
		if IsUser(obj) {
			obj = UserName
		}
		if r.Ended && Functional(rel) {
			g.entity(obj, "")
			obj = ""
		}
		g.relation(subj, rel, obj, "", r.Ended, cited(r.Turns))
	}
	return Extraction{Facts: m.result(), Graph: g.result()}, nil
}

// validEntityType reports whether t is an entity type, or "" (unknown).
func validEntityType(t string) bool {
	switch t {
	case "", "person", "place", "organization", "thing", "event":
		return true
	}
	return false
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
