package tour

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	docKey  = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"\s*:`)
	docPair = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false)`)
)

// claim is a member a document's JSON example shows: its key and, when the example gives one
// that is not elided or approximate, its value.
type claim struct {
	key      string
	value    any // string, float64 (integers only) or bool; nil: any value
	hasValue bool
}

// docClaims reads what a document's JSON example claims about an answer. The examples are not
// JSON (they elide with "…"), so it reads the members one by one: every key, and every string,
// integer or boolean value that contains no "…". Fractions (scores, ratios) are left out: they
// are rounded in the documents, and a change of the ranking's arithmetic should not have to be
// copied into every example to keep the build green; their keys are still checked.
func docClaims(example string) ([]claim, error) {
	var claims []claim
	seen := map[string]bool{}
	for _, m := range docKey.FindAllStringSubmatch(example, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			claims = append(claims, claim{key: m[1]})
		}
	}
	for _, m := range docPair.FindAllStringSubmatch(example, -1) {
		key, raw := m[1], m[2]
		var v any
		switch {
		case strings.Contains(raw, "…"):
			continue
		case raw == "true" || raw == "false":
			v = raw == "true"
		case strings.HasPrefix(raw, `"`):
			var s string
			if err := json.Unmarshal([]byte(raw), &s); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", key, raw, err)
			}
			v = s
		default:
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				continue // a fraction
			}
			v = float64(n)
		}
		claims = append(claims, claim{key: key, value: v, hasValue: true})
	}
	return claims, nil
}

// members collects every key of a decoded JSON value with every value it has anywhere in it.
func members(v any, into map[string][]any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			into[k] = append(into[k], x)
			members(x, into)
		}
	case []any:
		for _, x := range v {
			members(x, into)
		}
	}
}

// checkClaims says which claims of a document's example no answer bears out: a key that no
// answer has, or a value that the key has nowhere in them. Where a key occurs several times
// (entries of a list), any occurrence with that value will do.
func checkClaims(claims []claim, answers []any) error {
	got := map[string][]any{}
	for _, a := range answers {
		members(a, got)
	}
	var wrong []string
	for _, c := range claims {
		vals, ok := got[c.key]
		switch {
		case !ok:
			wrong = append(wrong, fmt.Sprintf("no %q", c.key))
		case c.hasValue && !hasValue(vals, c.value):
			wrong = append(wrong, fmt.Sprintf("%q is %s, not %s", c.key, compact(vals), compact(c.value)))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("the answer does not show what the document says: %s", strings.Join(wrong, "; "))
	}
	return nil
}

func hasValue(vals []any, want any) bool {
	for _, v := range vals {
		if v == want {
			return true
		}
	}
	return false
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return fmt.Sprintf("%.300s", b)
}

func TestClaims(t *testing.T) {
	claims, err := docClaims(`{"user": "bob", "history": false, "n": 2, "score": 0.7, "id": "x…",
	  "facts": [{"content": "a \"b\"\n", "state": "live"}, …]}`)
	if err != nil {
		t.Fatal(err)
	}
	var answer any
	if err := json.Unmarshal([]byte(`{"user": "bob", "history": false, "n": 2, "score": 0.69, "id": "xyz",
	  "facts": [{"content": "other", "state": "live"}, {"content": "a \"b\"\n", "state": "live", "more": 1}]}`), &answer); err != nil {
		t.Fatal(err)
	}
	if err := checkClaims(claims, []any{answer}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"user": "eve", "history": false, "n": 2, "score": 1, "id": "", "facts": [{"content": "a \"b\"\n", "state": "live"}]}`,
		`{"user": "bob", "history": false, "n": 3, "score": 1, "id": "", "facts": [{"content": "a \"b\"\n", "state": "live"}]}`,
		`{"user": "bob", "history": false, "n": 2, "id": "", "facts": [{"content": "a \"b\"\n", "state": "live"}]}`,
		`{"user": "bob", "history": true, "n": 2, "score": 1, "id": "", "facts": []}`,
	} {
		if err := json.Unmarshal([]byte(bad), &answer); err != nil {
			t.Fatal(err)
		}
		if err := checkClaims(claims, []any{answer}); err == nil {
			t.Errorf("%s bears the claims out", bad)
		}
	}
}
