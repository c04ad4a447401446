// Package view is how the read surfaces of agentmem (the HTTP gateway, the inspector, memctl
// and the MCP server) show stored memory: a fact with its state (live, superseded or deleted)
// and a session's short-term memory with the state of each entry (kept, pending or named). Each
// rule is written here once; the surfaces build their answers from these views and keep their
// own wire names where those differ.
package view
