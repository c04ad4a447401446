// Package typescript holds agentmem's TypeScript package @agentmem/client: the HTTP API client
// (src/http.ts), the NATS client (src/agentmem.ts) with an example agent (src/agent.ts), and the
// LangChain.js and Vercel AI SDK integrations (src/langchain.ts, src/ai-sdk.ts) with their
// examples. It has no Go code of its own: its tests install the npm dependencies from
// package-lock.json, compile the TypeScript, start a real agentmem in process (with its HTTP
// gateway) and run the agent, the examples and test/http.ts against it, so that the wire
// contract (docs/protocol.md) and the HTTP API are checked from a second language, and
// test/retry.ts against scripted answers, so that both clients' retries are. They also
// pack the package and install it into a new project as its README says, and check that the
// Node.js versions of package.json agree with those of every locked dependency.
package typescript
