// Package memory is agentmem's memory model: the Entry that every part of the
// system stores and retrieves, its four types, token counting (a fast estimate
// and the exact o200k_base tokenizer), the token budget, the short-term memory
// of one conversation with FIFO eviction into a pending-compression list, the
// ledger of LLM usage, and the time decay and source weights used to score
// retrieval results.
//
// Nothing in this package does I/O or talks to NATS; it is pure, deterministic
// state that the workers build on, so the same stream of turns always gives
// the same memory.
package memory
