package gateway

import (
	"net/http"

	"github.com/agentmem/agentmem/api"
)

// serveOpenAPI serves the OpenAPI document of the routes (api/openapi.json).
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(api.OpenAPI)
}
