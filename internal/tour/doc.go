// Package tour holds no code: its test runs the examples of the documentation in the order the
// README links them, against one memoryd, as a newcomer would (the README's one-minute tour with
// memctl, the curl calls of docs/http.md, the Python script, the TypeScript agent and snippet,
// the langchaingo program), and checks that each shows what its document says. The examples are
// read from the documents themselves, so a document that drifts from what agentmem does, or two
// examples that trip over each other's sessions and users, fail `make test`.
package tour
