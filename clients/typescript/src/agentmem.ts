// agentmem.ts — a small TypeScript client for agentmem's v1 wire contract (docs/protocol.md).
//
// Copy this file into an agent: it needs only the official NATS client
// (@nats-io/transport-node and @nats-io/jetstream). It publishes turns and session ends as
// CloudEvents 1.0 in binary content mode on memory.turns.<tenant>.<session> (a JetStream publish,
// so the PubAck says the event is stored) and asks the retriever on memory.retrieve.<tenant>
// (NATS request-reply). Everything it uses is a subject under the agent's own tenant: no
// JetStream API or KV access is needed.

import { randomUUID } from "node:crypto";

import { errors, headers } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import type { JetStreamClient } from "@nats-io/jetstream";

/** CloudEvent type of a conversation turn. */
export const TYPE_TURN = "agentmem.turn.v1";
/** CloudEvent type of a session end. */
export const TYPE_SESSION_ENDED = "agentmem.session.ended.v1";

const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
const ROLES = ["user", "assistant", "system", "tool"] as const;

/** A turn's role: tool makes a TOOL_RESULT entry, every other role a CONVERSATION entry. */
export type Role = (typeof ROLES)[number];

/** Options shared by every call. */
export interface Options {
  /** The agent's tenant: every subject used is under it. */
  tenant: string;
  /** The CloudEvents source of published events (default "agentmem/typescript"). */
  source?: string;
  /** Bounds each call, in milliseconds (default 5000); a retrieve adds its wait_ms. */
  timeoutMs?: number;
}

/** One conversation turn to remember. */
export interface Turn {
  /**
   * Identifies the turn within its session (default: a random UUID); printable ASCII without
   * space, '"' or '%'. Publishing the same id again stores and applies it once.
   */
  id?: string;
  role: Role;
  content: string;
  /** Required on a session's first turn; the session belongs to that user. */
  user: string;
  /** Tool name, for role "tool". */
  tool?: string;
  metadata?: Record<string, unknown>;
  /** When the turn happened (default: now); it becomes the memory entry's timestamp. */
  time?: Date;
}

/** Confirms that JetStream stored an event. */
export interface Ack {
  /** The CloudEvent id (for a turn: the turn id, usable as a retrieve's `after`). */
  id: string;
  stream: string;
  seq: number;
  /** The id was stored before: this publish added nothing. */
  duplicate: boolean;
}

/** A retrieve request (docs/protocol.md, "Retrieve"). */
export interface RetrieveRequest {
  query: string;
  session?: string;
  user?: string;
  /** 1-200 (default 10). */
  limit?: number;
  sources?: Array<"short" | "long" | "archive">;
  types?: Array<"FACT" | "SUMMARY" | "CONVERSATION" | "TOOL_RESULT">;
  /** The query's "now", RFC 3339. */
  at?: string;
  /** Bounds the context text (default 2000; 0: no context). */
  context_tokens?: number;
  /** A turn id of the session that must be applied before the reply (read-your-writes). */
  after?: string;
  /** How long to wait for `after`, in milliseconds (at most 60000); then 503 (a rejected turn: TurnRejectedError at once). */
  wait_ms?: number;
}

/** One memory entry of a reply, best first. */
export interface Entry {
  id: string;
  type: "FACT" | "SUMMARY" | "CONVERSATION" | "TOOL_RESULT";
  content: string;
  timestamp: string;
  source: "short" | "long" | "archive";
  session?: string;
  score: number;
  scores?: { keyword?: number; vector?: number; decay?: number; weight?: number };
  provenance?: string[];
  metadata?: Record<string, unknown>;
}

/** A retrieve reply. */
export interface RetrieveReply {
  entries: Entry[];
  context?: string;
  context_tokens?: number;
}

/** An error reply of an agentmem service (400, 404, 429, 500, 503). */
export class ServiceError extends Error {
  constructor(
    /** The Nats-Service-Error-Code header. */
    readonly code: number,
    /** What is wrong: the body's error.message, else the Nats-Service-Error header. */
    readonly detail: string,
    /** The request field at fault, when the service names one. */
    readonly field?: string,
  ) {
    super(field ? `agentmem: ${code} ${field}: ${detail}` : `agentmem: ${code} ${detail}`);
    this.name = "ServiceError";
  }
}

/**
 * The turn a retrieve waits for (`after`) was rejected by ingest (a 400 on field "after"): it
 * will never be applied. `detail` carries the reason ("turn "t9" of session "s1" was rejected:
 * …"); fix the turn and publish it again.
 */
export class TurnRejectedError extends ServiceError {
  constructor(detail: string) {
    super(400, detail, "after");
    this.name = "TurnRejectedError";
  }
}

/** Publishes a turn and resolves once JetStream stored it. Invalid input throws before sending. */
export async function publishTurn(
  js: JetStreamClient,
  opts: Options,
  session: string,
  turn: Turn,
): Promise<Ack> {
  if (!ROLES.includes(turn.role)) {
    throw new Error(`agentmem: role must be one of ${ROLES.join(", ")}, got ${JSON.stringify(turn.role)}`);
  }
  if (turn.content.trim() === "") {
    throw new Error("agentmem: content must not be empty");
  }
  checkToken("user", turn.user);
  const body: Record<string, unknown> = { role: turn.role, content: turn.content, user: turn.user };
  if (turn.tool) body.tool = turn.tool;
  if (turn.metadata) body.metadata = turn.metadata;
  return publish(js, opts, session, turn.id ?? randomUUID(), TYPE_TURN, turn.time ?? new Date(), body);
}

/** Records that a session ended (its facts get extracted); a later turn reopens it. */
export async function endSession(js: JetStreamClient, opts: Options, session: string, user: string): Promise<Ack> {
  checkToken("user", user);
  return publish(js, opts, session, randomUUID(), TYPE_SESSION_ENDED, new Date(), { user });
}

/**
 * Asks the retriever. A service error rejects with a ServiceError (400 for a bad request, 503
 * when `after` was not applied within wait_ms, …), a TurnRejectedError when ingest rejected the
 * turn `after`; no retriever running rejects with an Error that says so.
 */
export async function retrieve(nc: NatsConnection, opts: Options, req: RetrieveRequest): Promise<RetrieveReply> {
  checkToken("tenant", opts.tenant);
  const subject = `memory.retrieve.${opts.tenant}`;
  const timeout = (opts.timeoutMs ?? 5000) + (req.wait_ms ?? 0);
  let msg;
  try {
    msg = await nc.request(subject, JSON.stringify(req), { timeout });
  } catch (err) {
    if (err instanceof errors.NoRespondersError || (err instanceof errors.RequestError && err.isNoResponders())) {
      throw new Error(`agentmem: no retriever answers on ${subject}`, { cause: err });
    }
    if (err instanceof errors.TimeoutError) {
      throw new Error(`agentmem: no reply on ${subject} within ${timeout} ms`, { cause: err });
    }
    throw err;
  }
  const code = msg.headers?.get("Nats-Service-Error-Code");
  if (code) {
    let message = msg.headers?.get("Nats-Service-Error") ?? "";
    let field: string | undefined;
    try {
      const body = msg.json<{ error?: { code?: number; field?: string; message?: string } }>();
      if (body.error?.message) {
        message = body.error.message;
        field = body.error.field || undefined;
      }
    } catch {
      // The headers say enough.
    }
    if (Number(code) === 400 && field === "after" && message.includes("was rejected")) {
      throw new TurnRejectedError(message);
    }
    throw new ServiceError(Number(code), message, field);
  }
  return msg.json<RetrieveReply>();
}

/** Percent-encodes a CloudEvents header value: UTF-8 bytes outside U+0021..U+007E, space, '"' and '%'. */
export function encodeHeaderValue(value: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(value)) {
    if (b > 0x20 && b < 0x7f && b !== 0x22 && b !== 0x25) {
      out += String.fromCharCode(b);
    } else {
      out += "%" + b.toString(16).toUpperCase().padStart(2, "0");
    }
  }
  return out;
}

async function publish(
  js: JetStreamClient,
  opts: Options,
  session: string,
  id: string,
  type: string,
  time: Date,
  body: unknown,
): Promise<Ack> {
  checkToken("tenant", opts.tenant);
  checkToken("session", session);
  if (!/^[\x21\x23\x24\x26-\x7e]+$/.test(id)) {
    // Kept verbatim in ce-id and Nats-Msg-Id, which must agree: no percent-encoding needed.
    throw new Error(`agentmem: id must be printable ASCII without space, '"' or '%', got ${JSON.stringify(id)}`);
  }
  const subject = `memory.turns.${opts.tenant}.${session}`;
  const h = headers();
  h.set("ce-specversion", "1.0");
  h.set("ce-id", id);
  h.set("ce-type", type);
  h.set("ce-source", encodeHeaderValue(opts.source ?? "agentmem/typescript"));
  h.set("ce-time", time.toISOString());
  h.set("content-type", "application/json");
  // msgID sets Nats-Msg-Id: a retried publish of the same id is stored once.
  const pa = await js.publish(subject, JSON.stringify(body), {
    headers: h,
    msgID: `${opts.tenant}.${session}.${id}`,
    timeout: opts.timeoutMs ?? 5000,
  });
  return { id, stream: pa.stream, seq: pa.seq, duplicate: pa.duplicate };
}

function checkToken(name: string, value: string): void {
  if (!TOKEN.test(value)) {
    throw new Error(`agentmem: ${name} must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(value)}`);
  }
}
