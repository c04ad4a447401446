// Package python holds agentmem's Python client (package agentmem, standard library only, over
// the HTTP API of docs/http.md) and its unittest suite. It has no Go code of its own: its test
// starts a real agentmem in process with the HTTP gateway on a free port and runs the Python
// tests against it with python3, so that the HTTP API is checked from Python as agents use it.
package python
