// Package python holds agentmem's Python client (package agentmem, standard library only, over
// the HTTP API of docs/http.md), its build backend (agentmem_build.py, so that pip installs it
// offline) and its unittest suite. It has no Go code of its own: its test starts a real
// agentmem in process with the HTTP gateway on a free port and runs the Python tests against it
// with python3, so that the HTTP API is checked from Python as agents use it, then installs the
// package as its README says, in fresh venvs with pip's index off, and runs the README's script.
package python
