// agentmem's TypeScript client over the HTTP API. The NATS client is "@agentmem/client/nats",
// the framework integrations "@agentmem/client/langchain" and "@agentmem/client/ai-sdk".

export { AgentmemClient, checkToken, DEFAULT_RETRY_MS } from "./http.js";
export type { BatchEvent, ClientOptions, TurnInput } from "./http.js";
export * from "./errors.js";
export type * from "./types.js";
