// Package api holds the documents that describe agentmem's HTTP API: openapi.json, the OpenAPI
// 3.1 document of the gateway's routes and reply shapes, embedded so that the gateway serves the
// same bytes that are kept in the repository (GET /v1/openapi.json).
package api

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document of the HTTP API (api/openapi.json).
//
//go:embed openapi.json
var OpenAPI []byte
