package gateway

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/agentmem/agentmem/pkg/events"
)

// LoadTokens reads a tokens file: a JSON object mapping each bearer token to its tenant,
// {"token": "tenant", …}. It fails when the file cannot be read or is not such an object; the
// tokens themselves are checked by Config.Validate.
func LoadTokens(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tokens: %w", err)
	}
	var tokens map[string]string
	if err := json.Unmarshal(data, &tokens); err != nil {
		return nil, fmt.Errorf("tokens file %s: want a JSON object {\"token\": \"tenant\"}: %w", path, err)
	}
	return tokens, nil
}

// tenantHandler serves a route under /v1/tenants/{tenant}/ for an authorised tenant.
type tenantHandler func(w http.ResponseWriter, r *http.Request, tenant string)

// tenant wraps a tenant route: it authenticates the bearer token (401 when missing or unknown),
// checks the path's tenant token (400 naming tenant) and that it is the token's tenant (403), and
// bounds the request body (413 beyond MaxBodyBytes).
func (g *Gateway) tenant(h tenantHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		granted, p := g.authenticate(r)
		if p != nil {
			writeProblem(w, r, p)
			return
		}
		tenant := r.PathValue("tenant")
		if err := events.ValidateToken("tenant", tenant); err != nil {
			writeProblem(w, r, invalid(err))
			return
		}
		if granted != "" && granted != tenant {
			writeProblem(w, r, problem(http.StatusForbidden, "tenant",
				fmt.Sprintf("the token is not allowed to act for tenant %q", tenant)))
			return
		}
		if r.ContentLength > g.cfg.MaxBodyBytes {
			writeProblem(w, r, tooLarge(g.cfg.MaxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes)
		h(w, r, tenant)
	})
}

// authenticate returns the tenant of the request's bearer token ("" when no tokens are
// configured), or a 401 problem.
func (g *Gateway) authenticate(r *http.Request) (string, *Problem) {
	if len(g.tokens) == 0 {
		return "", nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", problem(http.StatusUnauthorized, "authorization", "a bearer token is required: Authorization: Bearer <token>")
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", problem(http.StatusUnauthorized, "authorization", "want Authorization: Bearer <token>")
	}
	tenant, ok := g.tokens[sha256.Sum256([]byte(token))]
	if !ok {
		return "", problem(http.StatusUnauthorized, "authorization", "unknown token")
	}
	return tenant, nil
}

// tooLarge is the 413 problem for a body over the limit.
func tooLarge(limit int64) *Problem {
	return problem(http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("the body is larger than the limit of %d bytes", limit))
}
