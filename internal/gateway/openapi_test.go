package gateway_test

import (
	"bytes"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestOpenAPIMatchesRoutes checks that every route the gateway registers is a path and method of
// api/openapi.json and the other way round, that the document names the same path parameters,
// and that each operation documents its errors as problems. The response shapes are checked
// against every reply of the other tests (env.do).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	b := brokertest.Start(t)
	g, err := gateway.New(gateway.Config{}, b.NC, b.JS, events.DefaultTopology(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, r := range g.Routes() {
		routes = append(routes, r.Method+" "+r.Pattern)
	}
	slices.Sort(routes)
	d := loadDoc(t)
	if ops := d.operations(); !slices.Equal(routes, ops) {
		t.Fatalf("routes and document differ:\nroutes   %v\ndocument %v", routes, ops)
	}
	param := regexp.MustCompile(`\{([a-z]+)\}`)
	for _, p := range d.paths {
		want := param.FindAllStringSubmatch(p.template, -1)
		for method, o := range p.ops {
			op := o.(map[string]any)
			var inPath []string
			for _, x := range asSlice(op["parameters"]) {
				if pm := x.(map[string]any); pm["in"] == "path" {
					inPath = append(inPath, pm["name"].(string))
				}
			}
			for _, w := range want {
				if !slices.Contains(inPath, w[1]) {
					t.Errorf("%s %s: path parameter %q is not documented", method, p.template, w[1])
				}
			}
			if len(inPath) != len(want) {
				t.Errorf("%s %s: documents path parameters %v", method, p.template, inPath)
			}
			responses := op["responses"].(map[string]any)
			if strings.HasPrefix(p.template, "/v1/tenants/") {
				for _, code := range []string{"400", "401", "403", "default"} {
					if _, ok := responses[code]; !ok {
						t.Errorf("%s %s: response %s is not documented", method, p.template, code)
					}
				}
			}
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	e, _ := bare(t, gateway.Config{})
	r := e.do(t, request{method: "GET", path: "/v1/openapi.json"})
	if r.status != http.StatusOK || !bytes.Equal(r.body, api.OpenAPI) || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, %d bytes, content-type %q", r.status, len(r.body), r.header.Get("Content-Type"))
	}
	if v, _ := loadDoc(t).raw["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("openapi version %q", v)
	}
}
