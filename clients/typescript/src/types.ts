// The HTTP API's request and reply bodies, as api/openapi.json's schemas name them.

/** Who said a turn. */
export type Role = "user" | "assistant" | "system" | "tool";
/** What a memory entry is. */
export type EntryType = "FACT" | "SUMMARY" | "CONVERSATION" | "TOOL_RESULT";
/** Which memory tier an entry comes from. */
export type Source = "short" | "long" | "archive";

/** The data of an agentmem.turn.v1 event. */
export interface Turn {
  role: Role;
  content: string;
  /** Required on a session's first turn; the session belongs to that user. */
  user?: string;
  tool?: string;
  metadata?: Record<string, unknown>;
}

/** The data of an agentmem.session.ended.v1 event. */
export interface SessionEnded {
  user?: string;
}

/** A structured-mode CloudEvent 1.0, as POST /events takes it. */
export interface CloudEvent {
  specversion: "1.0";
  id: string;
  source: string;
  type: "agentmem.turn.v1" | "agentmem.session.ended.v1";
  /** The session. */
  subject: string;
  time?: string;
  datacontenttype?: string;
  data?: Turn | SessionEnded;
}

/** The reply to a published event: JetStream stored it. */
export interface PublishResult {
  id: string;
  session: string;
  stream: string;
  seq: number;
  /** An event with this id was stored in the session before: nothing was added. */
  duplicate: boolean;
}

export interface BatchResult {
  results: PublishResult[];
}

export interface RetrieveRequest {
  query: string;
  session?: string;
  user?: string;
  /** 1-200, default 10. */
  limit?: number;
  sources?: Source[];
  types?: EntryType[];
  /** RFC 3339: the "now" of the query. */
  at?: string;
  /** The context's token budget, default 2000. */
  context_tokens?: number;
  /** A turn id of the session that must be applied first. */
  after?: string;
  /** How long to wait for `after`, 0-60000. */
  wait_ms?: number;
}

export interface Scores {
  keyword: number;
  /** Absent without an embedder. */
  vector?: number;
  decay: number;
  weight: number;
  relevance?: number;
}

/** One entry of a retrieve reply (the OpenAPI document's RetrievedEntry). */
export interface Entry {
  id: string;
  type: EntryType;
  content: string;
  timestamp: string;
  source: Source;
  session?: string;
  score: number;
  scores: Scores;
  provenance?: string[];
  metadata?: Record<string, unknown>;
}

export type RetrievedEntry = Entry;

export interface RetrieveReply {
  entries: Entry[];
  /** The text for the prompt: the user's profile, relevant facts, summaries and turns. */
  context: string;
  context_tokens: number;
  /** The user's live facts the context includes although they do not match the query. */
  profile?: Entry[];
}

export interface SessionEntry {
  id: string;
  type: "SUMMARY" | "CONVERSATION" | "TOOL_RESULT";
  role?: Role;
  tokens: number;
  timestamp: string;
  state: "kept" | "pending" | "named";
  covers?: number;
}

/** A session's short-term state (GET /sessions/{session}). */
export interface Session {
  tenant: string;
  session: string;
  user: string;
  tokens: number;
  budget: number;
  ratio: number;
  kept: number;
  pending: number;
  pending_tokens: number;
  turns: number;
  rejected: number;
  pressures: number;
  summaries: number;
  ended: boolean;
  ended_at?: string;
  first_turn_at?: string;
  last_turn_at?: string;
  updated?: string;
  entries: SessionEntry[];
}

export interface Fact {
  id: string;
  content: string;
  category: string;
  key?: string;
  valid_from: string;
  valid_to?: string;
  superseded_by?: string;
  provenance: string[];
  confidence: number;
  extractor?: string;
  state: "live" | "superseded" | "deleted";
}

export interface Facts {
  user: string;
  history: boolean;
  facts: Fact[];
}

export interface ForgetReply {
  /** Counts by kind: turns, facts, summaries, sessions, … */
  forgotten: Record<string, number>;
}

export interface DeadLetter {
  seq: number;
  id: string;
  session: string;
  subject: string;
  reason: string;
  class?: string;
  time: string;
  delivered: number;
  stream_seq?: number;
  body: string;
  body_size: number;
  truncated: boolean;
}

export interface EventStatus {
  id: string;
  session: string;
  status: "applied" | "pending" | "rejected";
  reason?: string;
  dead_letter?: DeadLetter;
}

export interface EventError {
  index: number;
  field?: string;
  detail: string;
}

/** An RFC 9457 problem, the body of every error. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  field?: string;
  index?: number;
  errors?: EventError[];
  results?: PublishResult[];
}
