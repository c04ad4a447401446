// Package langchaingo is agentmem's memory for langchaingo (github.com/tmc/langchaingo) chains
// and agents, in its own module so that agentmem's main module does not depend on langchaingo.
//
// [Memory] is a schema.Memory: SaveContext publishes the chain's input and output as turns of
// the session as they happen, and LoadMemoryVariables returns, as the memory variable
// ("history"), the context agentmem builds for the current input: the user's profile (their
// live facts, also in a new session whose question shares no word with them), relevant facts,
// summaries and turns. [ChatHistory] is a schema.ChatMessageHistory that publishes every message
// as a turn, for langchaingo's buffer memories and agents.
//
// agentmem serves memory by relevance within a token budget, not whole transcripts: it keeps
// every turn, compresses old ones into summaries and extracts facts when a session ends (Clear
// ends it). Both types talk to agentmem through pkg/client over NATS, under one tenant.
package langchaingo
