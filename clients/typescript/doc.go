// Package typescript holds agentmem's TypeScript client (src/agentmem.ts) and an example agent
// (src/agent.ts) built on the official NATS client from npm. It has no Go code of its own: its
// test installs the npm dependencies from package-lock.json, compiles the TypeScript, starts a
// real agentmem in process and runs the agent against it, so that the wire contract
// (docs/protocol.md) is checked from a second language.
package typescript
