// The client of agentmem's HTTP API (docs/http.md): publish turns, end sessions, retrieve,
// read sessions, event status, dead letters and facts, forget a user. Only fetch: no dependency.

import { randomUUID } from "node:crypto";

import { AgentmemConnectionError, AgentmemError, AgentmemTimeoutError, errorFor } from "./errors.js";
import type {
  BatchResult, CloudEvent, DeadLetter, EventStatus, Fact, Facts, ForgetReply, Problem,
  PublishResult, RetrieveReply, RetrieveRequest, Session, SessionEnded, Turn,
} from "./types.js";

const tokenRe = /^[A-Za-z0-9_-]{1,64}$/;

/** How long a call keeps trying by default (ClientOptions.retryMs), in milliseconds. */
export const DEFAULT_RETRY_MS = 30_000;

/** The statuses of answers that may pass when asked again (a 503 on `after` excepted). */
const RETRY_STATUSES = new Set([429, 502, 503, 504]);

export interface ClientOptions {
  /** The gateway's base URL, e.g. http://127.0.0.1:8080 (memoryd --http). */
  url: string;
  tenant: string;
  /** A bearer token of the tenant (memoryd --http-tokens); none when memoryd runs without. */
  token?: string;
  /** The CloudEvents source of published events (default "agent/typescript"). */
  source?: string;
  /** Bounds each attempt of a call, in milliseconds (default 10000); a retrieve adds its wait_ms. */
  timeoutMs?: number;
  /**
   * How long a call that failed for a passing reason is tried again, in milliseconds (default
   * 30000, longer than a NATS stream's leader election after a node crashed; 0: one attempt):
   * a 429, 502, 503 (not a 503 on `after`: the retriever waited wait_ms already) or 504 answer,
   * a connection failure or a timeout. It waits Retry-After when the answer has one (a wait past
   * retryMs is thrown at once), else a jittered backoff from backoffMs doubling up to
   * maxBackoffMs. Every attempt sends the same body: events keep their ids, so a retried
   * publish is stored once.
   */
  retryMs?: number;
  /** The first wait between attempts, in milliseconds (default 200). */
  backoffMs?: number;
  /** The longest wait between attempts without Retry-After, in milliseconds (default 5000). */
  maxBackoffMs?: number;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
}

/** A turn to publish: the turn's data plus an optional id (a UUID by default) and time. */
export interface TurnInput extends Turn {
  id?: string;
  /** RFC 3339 or a Date; default now. */
  time?: string | Date;
}

/** An event of a batch: a turn, or a session end when `end` is true. */
export type BatchEvent =
  | ({ session: string; end?: false } & TurnInput)
  | { session: string; end: true; user?: string; id?: string; time?: string | Date };

/** checkToken throws a TypeError naming `field` unless value is a valid tenant, session or user. */
export function checkToken(field: string, value: unknown): string {
  if (typeof value !== "string" || !tokenRe.test(value)) {
    throw new TypeError(`${field}: must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** AgentmemClient talks to one tenant of agentmem's HTTP API. */
export class AgentmemClient {
  readonly url: string;
  readonly tenant: string;
  readonly source: string;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  private readonly retryMs: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly fetch: typeof fetch;

  constructor(opts: ClientOptions) {
    if (!opts || typeof opts.url !== "string" || !/^https?:\/\//.test(opts.url)) {
      throw new TypeError(`url: want an http:// or https:// URL, got ${JSON.stringify(opts?.url)}`);
    }
    this.url = opts.url.replace(/\/+$/, "");
    this.tenant = checkToken("tenant", opts.tenant);
    this.token = opts.token || undefined;
    this.source = opts.source ?? "agent/typescript";
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.retryMs = Math.max(0, opts.retryMs ?? DEFAULT_RETRY_MS);
    this.backoffMs = opts.backoffMs ?? 200;
    this.maxBackoffMs = opts.maxBackoffMs ?? 5_000;
    this.fetch = opts.fetch ?? globalThis.fetch;
  }

  /** Publishes one turn of a session (a structured CloudEvent); resolves once it is stored. */
  async publish(session: string, turn: TurnInput): Promise<PublishResult> {
    return this.request<PublishResult>("POST", this.path("events"), this.turnEvent(session, turn),
      "application/cloudevents+json");
  }

  /** Publishes events in one request, in order: all are checked first, none stored if one is invalid. */
  async publishBatch(events: BatchEvent[]): Promise<PublishResult[]> {
    const body = events.map((e) =>
      e.end ? this.endEvent(e.session, e.user, e.id, e.time) : this.turnEvent(e.session, e));
    const reply = await this.request<BatchResult>("POST", this.path("events"), body,
      "application/cloudevents-batch+json");
    return reply.results;
  }

  /** Ends a session through the gateway (POST .../end): the extractor extracts its facts now. */
  async endSession(session: string, user?: string): Promise<PublishResult> {
    checkToken("session", session);
    const body = user === undefined ? undefined : { user: checkToken("user", user) };
    return this.request<PublishResult>("POST", this.path("sessions", session, "end"), body);
  }

  /** Retrieves entries and the prompt context for a query. */
  async retrieve(req: RetrieveRequest): Promise<RetrieveReply> {
    if (req.session !== undefined) checkToken("session", req.session);
    if (req.user !== undefined) checkToken("user", req.user);
    return this.request<RetrieveReply>("POST", this.path("retrieve"), req, "application/json", req.wait_ms ?? 0);
  }

  /** A session's short-term state (counters and entries without their text). */
  async session(session: string): Promise<Session> {
    checkToken("session", session);
    return this.request<Session>("GET", this.path("sessions", session));
  }

  /** What became of a published event: applied, pending or rejected (with its dead letter). */
  async eventStatus(session: string, id: string): Promise<EventStatus> {
    checkToken("session", session);
    return this.request<EventStatus>("GET", this.path("sessions", session, "events", id));
  }

  /** The tenant's dead letters, newest first. */
  async deadLetters(opts: { session?: string; limit?: number } = {}): Promise<DeadLetter[]> {
    const q = new URLSearchParams();
    if (opts.session !== undefined) q.set("session", checkToken("session", opts.session));
    if (opts.limit !== undefined) q.set("limit", String(opts.limit));
    const qs = q.toString() ? `?${q}` : "";
    return (await this.request<{ dead_letters: DeadLetter[] }>("GET", this.path("dead-letters") + qs)).dead_letters;
  }

  /** The user's live facts, or with history also the superseded and deleted ones. */
  async facts(user: string, opts: { history?: boolean } = {}): Promise<Fact[]> {
    checkToken("user", user);
    const qs = opts.history ? "?history=true" : "";
    return (await this.request<Facts>("GET", this.path("users", user, "facts") + qs)).facts;
  }

  /** One fact of the user, whatever its state. */
  async fact(user: string, id: string): Promise<Fact> {
    checkToken("user", user);
    return this.request<Fact>("GET", this.path("users", user, "facts", id));
  }

  /** Corrects a fact: the reply is the new fact that supersedes it. */
  async correctFact(user: string, id: string, content: string): Promise<Fact> {
    checkToken("user", user);
    return this.request<Fact>("PUT", this.path("users", user, "facts", id), { content });
  }

  /** Deletes a fact; the reply is the deleted fact. */
  async deleteFact(user: string, id: string): Promise<Fact> {
    checkToken("user", user);
    return this.request<Fact>("DELETE", this.path("users", user, "facts", id));
  }

  /** Forgets everything of a user; the reply counts what went, by kind. */
  async forget(user: string): Promise<Record<string, number>> {
    checkToken("user", user);
    return (await this.request<ForgetReply>("DELETE", this.path("users", user))).forgotten;
  }

  /**
   * Polls the user's live facts until one contains `contains` (case-insensitive; any fact when
   * empty). Facts are extracted when a session ends, so they appear a moment after endSession.
   */
  async waitForFact(user: string, contains = "", opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<Fact> {
    const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
    const want = contains.toLowerCase();
    for (;;) {
      const found = (await this.facts(user)).find((f) => f.content.toLowerCase().includes(want));
      if (found) return found;
      if (Date.now() >= deadline) {
        throw new AgentmemTimeoutError(`no fact of user ${JSON.stringify(user)} contains ${JSON.stringify(contains)} after ${opts.timeoutMs ?? 15_000} ms`);
      }
      await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
    }
  }

  private turnEvent(session: string, turn: TurnInput): CloudEvent {
    checkToken("session", session);
    const { id, time, ...data } = turn;
    if (data.user !== undefined) checkToken("user", data.user);
    return this.event(session, "agentmem.turn.v1", data, id, time);
  }

  private endEvent(session: string, user?: string, id?: string, time?: string | Date): CloudEvent {
    checkToken("session", session);
    const data: SessionEnded = user === undefined ? {} : { user: checkToken("user", user) };
    return this.event(session, "agentmem.session.ended.v1", data, id, time);
  }

  private event(session: string, type: CloudEvent["type"], data: Turn | SessionEnded, id?: string, time?: string | Date): CloudEvent {
    return {
      specversion: "1.0",
      id: id ?? randomUUID(),
      source: this.source,
      type,
      subject: session,
      time: time instanceof Date ? time.toISOString() : (time ?? new Date().toISOString()),
      datacontenttype: "application/json",
      data,
    };
  }

  private path(...parts: string[]): string {
    return `/v1/tenants/${encodeURIComponent(this.tenant)}/${parts.map(encodeURIComponent).join("/")}`;
  }

  /**
   * Sends a request, trying again what may pass (see ClientOptions.retryMs) with the same body,
   * and resolves with the decoded reply.
   */
  private async request<T>(method: string, path: string, body?: unknown, contentType = "application/json", extraMs = 0): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["content-type"] = contentType;
    const payload = body === undefined ? undefined : JSON.stringify(body); // encoded once: the same ids every attempt
    const start = Date.now();
    for (let attempt = 1; ; attempt++) {
      let failure: Error;
      try {
        return await this.attempt<T>(method, path, headers, payload, extraMs);
      } catch (err) {
        failure = err as Error;
      }
      const wait = this.retryWait(failure, attempt, Date.now() - start);
      if (wait === undefined) throw failure;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** How long to wait before trying again after err, the attempt-th, elapsedMs after the first began; undefined: give up. */
  private retryWait(err: Error, attempt: number, elapsedMs: number): number | undefined {
    let wait: number;
    if (err instanceof AgentmemError) {
      if (!RETRY_STATUSES.has(err.status) || (err.status === 503 && err.field === "after")) return undefined;
      wait = err.retryAfter !== undefined ? err.retryAfter * 1000 : this.backoff(attempt);
    } else if (err instanceof AgentmemConnectionError) {
      wait = this.backoff(attempt);
    } else {
      return undefined;
    }
    return elapsedMs + wait > this.retryMs ? undefined : wait;
  }

  private backoff(attempt: number): number {
    return Math.min(this.maxBackoffMs, this.backoffMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
  }

  private async attempt<T>(method: string, path: string, headers: Record<string, string>, payload: string | undefined, extraMs: number): Promise<T> {
    let resp: Response;
    let text: string;
    try {
      resp = await this.fetch(this.url + path, {
        method,
        headers,
        body: payload,
        signal: AbortSignal.timeout(this.timeoutMs + extraMs),
      });
      text = await resp.text();
    } catch (err) {
      throw new AgentmemConnectionError(`agentmem: ${method} ${this.url}${path}: ${(err as Error).message}`, { cause: err });
    }
    if (resp.ok) {
      return JSON.parse(text) as T;
    }
    throw problemError(resp, text, path);
  }
}

function problemError(resp: Response, text: string, path: string): AgentmemError {
  let problem: Problem;
  try {
    problem = JSON.parse(text) as Problem;
    if (typeof problem !== "object" || problem === null || typeof problem.status !== "number") throw new Error("not a problem");
  } catch {
    problem = { type: "about:blank", title: resp.statusText || `HTTP ${resp.status}`, status: resp.status, detail: text.trim().slice(0, 500), instance: path };
  }
  const ra = resp.headers.get("retry-after");
  const secs = ra === null ? undefined : Number(ra);
  return errorFor(problem, secs !== undefined && Number.isFinite(secs) ? secs : undefined);
}
