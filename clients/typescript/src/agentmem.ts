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
import { JetStreamApiError } from "@nats-io/jetstream";
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
  /** Bounds each attempt of a call, in milliseconds (default 5000); a retrieve adds its wait_ms. */
  timeoutMs?: number;
  /**
   * How long a call that failed for a passing reason is tried again, in milliseconds (default
   * 30000, longer than a stream's leader election after a node crashed, 4-9 s; 0: one attempt).
   * A publish is sent again, with the same Nats-Msg-Id (stored once), when no stream answered,
   * none answered within timeoutMs, or JetStream answered 5xx; a retrieve is asked again when no
   * retriever answered, none answered in time, or it answered 503 (not a 503 on `after`: it
   * waited wait_ms already). Backoff from 50 ms doubling up to 1 s. A 4xx is never retried.
   */
  retryMs?: number;
}

/** How long a call keeps trying by default (Options.retryMs), in milliseconds. */
export const DEFAULT_RETRY_MS = 30_000;

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
  const body = JSON.stringify(req);
  const msg = await retrying(opts, async () => {
    let m;
    try {
      m = await nc.request(subject, body, { timeout });
    } catch (err) {
      if (err instanceof errors.NoRespondersError || (err instanceof errors.RequestError && err.isNoResponders())) {
        throw new Passing(`agentmem: no retriever answers on ${subject}`, { cause: err });
      }
      if (err instanceof errors.TimeoutError || (err instanceof errors.RequestError && err.cause instanceof errors.TimeoutError)) {
        throw new Passing(`agentmem: no reply on ${subject} within ${timeout} ms`, { cause: err });
      }
      throw err;
    }
    const code = m.headers?.get("Nats-Service-Error-Code");
    if (code) {
      let message = m.headers?.get("Nats-Service-Error") ?? "";
      let field: string | undefined;
      try {
        const body = m.json<{ error?: { code?: number; field?: string; message?: string } }>();
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
      const se = new ServiceError(Number(code), message, field);
      // A 503 is the service not being ready; on "after" it waited wait_ms for the turn already.
      throw Number(code) === 503 && field !== "after" ? new Passing(se.message, { cause: se }) : se;
    }
    return m;
  });
  return msg.json<RetrieveReply>();
}

/** A failure that may pass when the call is made again; its cause is what the caller sees. */
class Passing extends Error {}

/**
 * Calls fn until it resolves, throws something other than Passing, or opts.retryMs has passed
 * since the first call, backing off from 50 ms up to 1 s. A Passing that ends the calls is
 * thrown as its cause when that is a ServiceError, else as an Error with its message.
 */
async function retrying<T>(opts: Options, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + Math.max(0, opts.retryMs ?? DEFAULT_RETRY_MS);
  for (let wait = 50; ; wait = Math.min(2 * wait, 1000)) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof Passing)) throw err;
      if (Date.now() + wait > deadline) {
        throw err.cause instanceof ServiceError ? err.cause : new Error(err.message, { cause: err.cause });
      }
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
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
  const data = JSON.stringify(body);
  const timeout = opts.timeoutMs ?? 5000;
  const pa = await retrying(opts, async () => {
    try {
      // msgID sets Nats-Msg-Id: a retried publish of the same id is stored once.
      return await js.publish(subject, data, { headers: h, msgID: `${opts.tenant}.${session}.${id}`, timeout });
    } catch (err) {
      // No stream answered (nats.js says "jetstream is not enabled", with the no responders as
      // its cause), as while the stream elects a leader; no answer in time; a 5xx.
      const cause = (err as Error).cause;
      if ((cause instanceof errors.RequestError && cause.isNoResponders()) || cause instanceof errors.NoRespondersError) {
        throw new Passing(`agentmem: no stream answers on ${subject}`, { cause: err });
      }
      if (err instanceof errors.TimeoutError || (err instanceof errors.RequestError && err.cause instanceof errors.TimeoutError)) {
        throw new Passing(`agentmem: no acknowledgement on ${subject} within ${timeout} ms`, { cause: err });
      }
      if (err instanceof JetStreamApiError && err.status >= 500) {
        throw new Passing(`agentmem: publishing on ${subject}: ${err.message}`, { cause: err });
      }
      throw err;
    }
  });
  return { id, stream: pa.stream, seq: pa.seq, duplicate: pa.duplicate };
}

function checkToken(name: string, value: string): void {
  if (!TOKEN.test(value)) {
    throw new Error(`agentmem: ${name} must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(value)}`);
  }
}
