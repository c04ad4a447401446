package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
)

// apiDoc is the OpenAPI document (api/openapi.json) and a checker for the subset of JSON Schema
// it uses. The checker refuses any schema keyword it does not implement, so the document cannot
// claim a constraint that the tests silently skip.
type apiDoc struct {
	raw   map[string]any
	paths []docPath
}

type docPath struct {
	template string
	re       *regexp.Regexp
	ops      map[string]any // lower-case method -> operation
}

// Keywords the checker implements, and annotations it ignores.
var (
	schemaKeywords = []string{"$ref", "type", "enum", "required", "properties", "additionalProperties", "items",
		"oneOf", "format", "pattern", "minimum", "maximum"}
	schemaAnnotations = []string{"description", "title", "default", "examples", "example", "deprecated", "readOnly"}
)

func loadDoc(t testing.TB) *apiDoc {
	t.Helper()
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(api.OpenAPI))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("api/openapi.json is not JSON: %v", err)
	}
	d := &apiDoc{raw: raw}
	paths, _ := raw["paths"].(map[string]any)
	for tmpl, v := range paths {
		item, _ := v.(map[string]any)
		pattern := regexp.MustCompile(`\\\{[a-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`)
		dp := docPath{template: tmpl, re: regexp.MustCompile("^" + pattern + "$"), ops: map[string]any{}}
		for m, op := range item {
			dp.ops[m] = op
		}
		d.paths = append(d.paths, dp)
	}
	slices.SortFunc(d.paths, func(a, b docPath) int { return strings.Compare(a.template, b.template) })
	return d
}

// operations lists every "METHOD template" of the document.
func (d *apiDoc) operations() []string {
	var out []string
	for _, p := range d.paths {
		for m := range p.ops {
			out = append(out, strings.ToUpper(m)+" "+p.template)
		}
	}
	slices.Sort(out)
	return out
}

// resolve follows a local $ref ("#/components/...").
func (d *apiDoc) resolve(ref string) (map[string]any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q is not local", ref)
	}
	var cur any = d.raw
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q: %q is not in an object", ref, part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("$ref %q: no %q", ref, part)
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q is not an object", ref)
	}
	return m, nil
}

// responseSchema returns the schema the document declares for a response: the operation of the
// path template that matches path, the response of the status (else "default"), the content of
// the media type.
func (d *apiDoc) responseSchema(method, path string, status int, contentType string) (any, error) {
	var op map[string]any
	for _, p := range d.paths {
		if p.re.MatchString(path) {
			o, ok := p.ops[strings.ToLower(method)].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("the document has no %s for %s (%s)", method, path, p.template)
			}
			op = o
			break
		}
	}
	if op == nil {
		return nil, fmt.Errorf("the document has no path for %s", path)
	}
	responses, _ := op["responses"].(map[string]any)
	resp, ok := responses[strconv.Itoa(status)].(map[string]any)
	if !ok {
		if resp, ok = responses["default"].(map[string]any); !ok {
			return nil, fmt.Errorf("%s %s: no response %d and no default", method, path, status)
		}
	}
	if ref, ok := resp["$ref"].(string); ok {
		var err error
		if resp, err = d.resolve(ref); err != nil {
			return nil, err
		}
	}
	content, _ := resp["content"].(map[string]any)
	mt, _, _ := strings.Cut(contentType, ";")
	media, ok := content[strings.TrimSpace(mt)].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s %s %d: no content %q in the document", method, path, status, mt)
	}
	schema, ok := media["schema"]
	if !ok {
		return nil, fmt.Errorf("%s %s %d %s: no schema", method, path, status, mt)
	}
	return schema, nil
}

// validate checks a JSON body against a schema of the document.
func (d *apiDoc) validate(schema any, body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("body is not JSON: %v", err)
	}
	return d.check(schema, v, "$")
}

// check validates v (decoded with UseNumber) against schema; at names v in errors.
func (d *apiDoc) check(schema any, v any, at string) error {
	s, ok := schema.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema is not an object", at)
	}
	for k := range s {
		if !slices.Contains(schemaKeywords, k) && !slices.Contains(schemaAnnotations, k) {
			return fmt.Errorf("%s: schema keyword %q is not implemented by the test's checker", at, k)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		target, err := d.resolve(ref)
		if err != nil {
			return fmt.Errorf("%s: %v", at, err)
		}
		return d.check(target, v, at)
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, fmt.Sprint(x))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return isType(v, t) }) {
			return fmt.Errorf("%s: %s is not of type %v", at, short(v), types)
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
			return fmt.Errorf("%s: %s is not one of %v", at, short(v), enum)
		}
	}
	if f, ok := s["format"].(string); ok && f == "date-time" {
		if str, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				return fmt.Errorf("%s: %q is not a date-time", at, str)
			}
		}
	}
	if p, ok := s["pattern"].(string); ok {
		if str, ok := v.(string); ok && !regexp.MustCompile(p).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", at, str, p)
		}
	}
	if n, ok := v.(json.Number); ok {
		f, _ := n.Float64()
		if m, ok := s["minimum"].(json.Number); ok {
			if lim, _ := m.Float64(); f < lim {
				return fmt.Errorf("%s: %s is below the minimum %s", at, n, m)
			}
		}
		if m, ok := s["maximum"].(json.Number); ok {
			if lim, _ := m.Float64(); f > lim {
				return fmt.Errorf("%s: %s is above the maximum %s", at, n, m)
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		for _, r := range asSlice(s["required"]) {
			if _, ok := obj[fmt.Sprint(r)]; !ok {
				return fmt.Errorf("%s: required property %q is missing", at, r)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, val := range obj {
			if ps, ok := props[k]; ok {
				if err := d.check(ps, val, at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: property %q is not in the document", at, k)
				}
			case map[string]any:
				if err := d.check(ap, val, at+"."+k); err != nil {
					return err
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := s["items"]; ok {
			for i, x := range arr {
				if err := d.check(items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	if one, ok := s["oneOf"].([]any); ok {
		matched := 0
		var errs []string
		for _, alt := range one {
			if err := d.check(alt, v, at); err != nil {
				errs = append(errs, err.Error())
			} else {
				matched++
			}
		}
		if matched != 1 {
			return fmt.Errorf("%s: matches %d of the oneOf schemas, want exactly 1 (%s)", at, matched, strings.Join(errs, "; "))
		}
	}
	return nil
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func isType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(string(n), 10, 64)
		return err == nil
	}
	return false
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// TestSchemaChecker shows that the checker refuses what it should: it must not pass everything.
func TestSchemaChecker(t *testing.T) {
	d := loadDoc(t)
	publish := map[string]any{"$ref": "#/components/schemas/PublishResult"}
	for _, tc := range []struct {
		name   string
		schema any
		body   string
		ok     bool
	}{
		{"valid", publish, `{"id":"a","session":"s","stream":"X","seq":1,"duplicate":false}`, true},
		{"missing required", publish, `{"id":"a","session":"s","stream":"X","seq":1}`, false},
		{"wrong type", publish, `{"id":"a","session":"s","stream":"X","seq":"1","duplicate":false}`, false},
		{"not an integer", publish, `{"id":"a","session":"s","stream":"X","seq":1.5,"duplicate":false}`, false},
		{"below minimum", publish, `{"id":"a","session":"s","stream":"X","seq":0,"duplicate":false}`, false},
		{"extra property", publish, `{"id":"a","session":"s","stream":"X","seq":1,"duplicate":false,"x":1}`, false},
		{"enum", map[string]any{"$ref": "#/components/schemas/SessionEntry"},
			`{"id":"a","type":"FACT","tokens":1,"timestamp":"2026-01-01T00:00:00Z","state":"kept"}`, false},
		{"date-time", map[string]any{"$ref": "#/components/schemas/SessionEntry"},
			`{"id":"a","type":"SUMMARY","tokens":1,"timestamp":"yesterday","state":"kept"}`, false},
		{"array items", map[string]any{"$ref": "#/components/schemas/BatchResult"}, `{"results":[{"id":"a"}]}`, false},
		{"oneOf none", map[string]any{"oneOf": []any{publish, map[string]any{"$ref": "#/components/schemas/BatchResult"}}}, `{"x":1}`, false},
		{"oneOf one", map[string]any{"oneOf": []any{publish, map[string]any{"$ref": "#/components/schemas/BatchResult"}}}, `{"results":[]}`, true},
		{"additionalProperties schema", map[string]any{"$ref": "#/components/schemas/ForgetReply"}, `{"forgotten":{"turns":"many"}}`, false},
		{"unknown keyword", map[string]any{"type": "object", "minProperties": 1}, `{}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.validate(tc.schema, []byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("validate %s: err = %v, want ok = %t", tc.body, err, tc.ok)
			}
		})
	}
}

// TestOpenAPISchemasUseOnlyCheckedKeywords walks every schema of the document, so that no
// response schema relies on a keyword the checker would skip.
func TestOpenAPISchemasUseOnlyCheckedKeywords(t *testing.T) {
	d := loadDoc(t)
	var walk func(v any, at string, inSchema bool)
	walk = func(v any, at string, inSchema bool) {
		switch v := v.(type) {
		case map[string]any:
			if inSchema {
				for k := range v {
					if !slices.Contains(schemaKeywords, k) && !slices.Contains(schemaAnnotations, k) {
						t.Errorf("%s: schema keyword %q is not checked by the tests", at, k)
					}
				}
				for _, k := range []string{"items", "additionalProperties"} {
					if sub, ok := v[k].(map[string]any); ok {
						walk(sub, at+"."+k, true)
					}
				}
				if props, ok := v["properties"].(map[string]any); ok {
					for name, sub := range props {
						walk(sub, at+".properties."+name, true)
					}
				}
				for i, sub := range asSlice(v["oneOf"]) {
					walk(sub, fmt.Sprintf("%s.oneOf[%d]", at, i), true)
				}
				return
			}
			for k, sub := range v {
				walk(sub, at+"."+k, k == "schema")
			}
		case []any:
			for i, sub := range v {
				walk(sub, fmt.Sprintf("%s[%d]", at, i), false)
			}
		}
	}
	walk(d.raw["paths"], "paths", false)
	schemas, _ := d.raw["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range schemas {
		walk(s, "components.schemas."+name, true)
	}
}

// checkResponse validates a response of the test server against the document.
func (d *apiDoc) checkResponse(t testing.TB, method, path string, resp *http.Response, body []byte) {
	t.Helper()
	schema, err := d.responseSchema(method, path, resp.StatusCode, resp.Header.Get("Content-Type"))
	if err != nil {
		t.Errorf("OpenAPI: %v (body %s)", err, body)
		return
	}
	if err := d.validate(schema, body); err != nil {
		t.Errorf("OpenAPI: %s %s %d does not match the document: %v\nbody: %s", method, path, resp.StatusCode, err, body)
	}
}
