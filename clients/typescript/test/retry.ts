// Checks the clients' retries (retry_test.go runs it). The HTTP client against a scripted local
// HTTP server: what may pass (429, 502, 503, 504, a timeout) is tried again with the same body
// until retryMs, what will not (400, 404, a 503 on after) is thrown at once. The NATS client
// against scripted replies on a real NATS server (NATS_URL): a publish no stream answered, not
// answered in time or answered 503 is sent again with the same Nats-Msg-Id, a 400 is final; a
// retrieve likewise, a 503 on after final. Prints one JSON line.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { connect, Empty, headers } from "@nats-io/transport-node";
import type { Msg, MsgHdrs, NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import {
  AgentmemClient, AgentmemConnectionError, BadRequestError, NotFoundError, RateLimitError, ServiceUnavailableError,
} from "@agentmem/client";
import { publishTurn, retrieve, ServiceError } from "@agentmem/client/nats";

/** A scripted answer: a status, headers and a JSON body; hold: no answer at all. */
type Reply = { status: number; headers?: Record<string, string>; body?: unknown; hold?: boolean };
type Seen = { at: number; method: string; url: string; body: string };

const ack = { id: "x", session: "s1", stream: "AGENTMEM_TURNS", seq: 7, duplicate: false };
const retrieved = { entries: [], context: "", context_tokens: 0 };
const problem = (status: number, detail: string, field?: string) => ({ type: "about:blank", title: "x", status, detail, field });

/** Serves replies in order (the last one repeats) and records every request. */
async function serve(...replies: Reply[]): Promise<{ url: string; seen: Seen[]; close: () => void }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ at: Date.now(), method: req.method ?? "", url: req.url ?? "", body });
      const r = replies[Math.min(seen.length, replies.length) - 1]!;
      if (r.hold) return; // no answer: the client's attempt times out
      res.writeHead(r.status, { "content-type": r.status < 400 ? "application/json" : "application/problem+json", ...r.headers });
      res.end(JSON.stringify(r.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => { server.closeAllConnections(); server.close(); } };
}

const checks: string[] = [];
function check(name: string, ok: boolean, got?: unknown): void {
  if (!ok) throw new Error(`${name}: got ${JSON.stringify(got)}`);
  checks.push(name);
}
async function thrown(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  return undefined;
}

try {
  // A leader election, a gateway restart, a proxy's timeout: tried again, the same event each time.
  for (const status of [502, 503, 504]) {
    const s = await serve({ status, body: problem(status, "not now") }, { status, body: problem(status, "not now") }, { status: 202, body: ack });
    const mem = new AgentmemClient({ url: s.url, tenant: "acme", backoffMs: 10 });
    const a = await mem.publish("s1", { role: "user", content: "hello", user: "u1" });
    check(`${status} is tried again with the same event`, a.seq === 7 && s.seen.length === 3 && new Set(s.seen.map((r) => r.body)).size === 1, s.seen);
    s.close();
  }
  {
    const s = await serve({ status: 429, headers: { "retry-after": "1" }, body: problem(429, "over the rate") }, { status: 200, body: retrieved });
    await new AgentmemClient({ url: s.url, tenant: "acme" }).retrieve({ query: "q" });
    const gap = s.seen.length === 2 ? s.seen[1]!.at - s.seen[0]!.at : 0;
    check("429 is tried again after Retry-After", gap >= 950, { requests: s.seen.length, gap });
    s.close();
  }
  {
    // The retriever waited wait_ms for the turn already: another attempt would wait again.
    const s = await serve({ status: 503, body: problem(503, 'turn "t9" of session "s1" is not applied yet (waited 50 ms)', "after") }, { status: 200, body: retrieved });
    const err = await thrown(new AgentmemClient({ url: s.url, tenant: "acme" }).retrieve({ query: "q", session: "s1", after: "t9", wait_ms: 50 }));
    check("a 503 on after is thrown at once", err instanceof ServiceUnavailableError && err.field === "after" && s.seen.length === 1, { err: String(err), n: s.seen.length });
    s.close();
  }
  for (const [status, cls] of [[400, BadRequestError], [404, NotFoundError]] as const) {
    const s = await serve({ status, body: problem(status, "no", "limit") }, { status: 200, body: retrieved });
    const err = await thrown(new AgentmemClient({ url: s.url, tenant: "acme" }).retrieve({ query: "q", limit: 5 }));
    check(`${status} is thrown at once`, err instanceof cls && s.seen.length === 1, { err: String(err), n: s.seen.length });
    s.close();
  }
  {
    // No answer within timeoutMs: tried again, until retryMs.
    const s = await serve({ status: 200, hold: true });
    const start = Date.now();
    const err = await thrown(new AgentmemClient({ url: s.url, tenant: "acme", timeoutMs: 200, retryMs: 600, backoffMs: 20 }).retrieve({ query: "q" }));
    const took = Date.now() - start;
    check("a timeout is tried again until retryMs", err instanceof AgentmemConnectionError && s.seen.length >= 2 && took < 5000, { err: String(err), n: s.seen.length, took });
    s.close();
  }
  {
    const s = await serve({ status: 503, body: problem(503, "no retriever") });
    const start = Date.now();
    const err = await thrown(new AgentmemClient({ url: s.url, tenant: "acme", retryMs: 500, backoffMs: 20, maxBackoffMs: 50 }).retrieve({ query: "q" }));
    const took = Date.now() - start;
    check("retries stop at retryMs", err instanceof ServiceUnavailableError && s.seen.length > 2 && took >= 400 && took < 5000, { n: s.seen.length, took });
    s.close();
  }
  {
    const s = await serve({ status: 429, headers: { "retry-after": "5" }, body: problem(429, "over the rate") });
    const err = await thrown(new AgentmemClient({ url: s.url, tenant: "acme", retryMs: 2000 }).retrieve({ query: "q" }));
    check("a Retry-After past retryMs is thrown at once", err instanceof RateLimitError && err.retryAfter === 5 && s.seen.length === 1, { err: String(err), n: s.seen.length });
    s.close();
  }
  {
    const s = await serve({ status: 503, body: problem(503, "no retriever") });
    const err = await thrown(new AgentmemClient({ url: s.url, tenant: "acme", retryMs: 0 }).retrieve({ query: "q" }));
    check("retryMs 0 is one attempt", err instanceof ServiceUnavailableError && s.seen.length === 1, { n: s.seen.length });
    s.close();
  }
  await natsChecks();
  console.log(JSON.stringify({ ok: true, checks }));
} catch (err) {
  console.error(err);
  console.log(JSON.stringify({ ok: false, error: (err as Error).message, checks }));
  process.exitCode = 1;
}

/** A scripted NATS reply: "none" (no answer: the attempt times out), "noResponders" (what the server sends when nothing is subscribed), or a body with optional headers. */
type NatsReply = "none" | "noResponders" | { headers?: Record<string, string>; body: unknown };

/** Answers requests on subject with replies in order (the last one repeats); returns what it saw. */
function script(nc: NatsConnection, subject: string, ...replies: NatsReply[]): { seen: Msg[]; stop: () => void } {
  const seen: Msg[] = [];
  const sub = nc.subscribe(subject, {
    callback: (_err, m) => {
      seen.push(m);
      const r = replies[Math.min(seen.length, replies.length) - 1]!;
      if (r === "none") return;
      if (r === "noResponders") {
        nc.publish(m.reply!, Empty, { headers: headers(503, "No Responders") });
        return;
      }
      let h: MsgHdrs | undefined;
      if (r.headers) {
        h = headers();
        for (const [k, v] of Object.entries(r.headers)) h.set(k, v);
      }
      nc.publish(m.reply!, JSON.stringify(r.body), { headers: h });
    },
  });
  return { seen, stop: () => sub.unsubscribe() };
}

async function natsChecks(): Promise<void> {
  const url = process.env.NATS_URL;
  if (!url) throw new Error("NATS_URL is not set");
  const agent = await connect({ servers: url });
  const service = await connect({ servers: url });
  try {
    const js = jetstream(agent);
    const opts = { tenant: "acme", timeoutMs: 300 };
    const pubAck = { body: { stream: "AGENTMEM_TURNS", seq: 9 } };
    const jsError = (code: number, description: string) => ({ body: { error: { code, err_code: 10000 + code, description } } });
    const turn = { id: "t1", role: "user" as const, content: "hello", user: "u1" };
    for (const [name, replies] of [
      ["no stream answers", ["noResponders", "noResponders", pubAck]],
      ["a publish lost", ["none", pubAck]],
      ["JetStream 503", [jsError(503, "JetStream system temporarily unavailable"), pubAck]],
    ] as const) {
      const s = script(service, "memory.turns.acme.s1", ...replies);
      await service.flush();
      const ack = await publishTurn(js, opts, "s1", turn);
      const ids = new Set(s.seen.map((m) => m.headers?.get("Nats-Msg-Id")));
      check(`nats publish: ${name} is sent again with the same Nats-Msg-Id`, ack.seq === 9 && s.seen.length === replies.length &&
        ids.size === 1 && ids.has("acme.s1.t1"), { seq: ack.seq, n: s.seen.length, ids: [...ids] });
      s.stop();
    }
    {
      const s = script(service, "memory.turns.acme.s1", jsError(400, "invalid"), pubAck);
      await service.flush();
      const err = await thrown(publishTurn(js, opts, "s1", turn));
      check("nats publish: a 400 is final", err !== undefined && s.seen.length === 1, { err: String(err), n: s.seen.length });
      s.stop();
    }
    const answer = { body: { entries: [], context: "ok" } };
    const serviceError = (code: number, message: string, field?: string) =>
      ({ headers: { "Nats-Service-Error-Code": String(code), "Nats-Service-Error": message }, body: { error: { code, field, message } } });
    for (const [name, replies] of [
      ["no retriever answers", ["noResponders", "noResponders", answer]],
      ["a request lost", ["none", answer]],
      ["503 not ready", [serviceError(503, "not ready"), answer]],
    ] as const) {
      const s = script(service, "memory.retrieve.acme", ...replies);
      await service.flush();
      const r = await retrieve(agent, opts, { query: "q" });
      check(`nats retrieve: ${name} is asked again`, r.context === "ok" && s.seen.length === replies.length, { n: s.seen.length });
      s.stop();
    }
    for (const [name, reply, code] of [
      ["a 400 is final", serviceError(400, "query must not be empty", "query"), 400],
      ["a 503 on after is final", serviceError(503, 'turn "t9" of session "s1" is not applied yet (waited 50 ms)', "after"), 503],
    ] as const) {
      const s = script(service, "memory.retrieve.acme", reply, answer);
      await service.flush();
      const err = await thrown(retrieve(agent, opts, { query: "q" }));
      check(`nats retrieve: ${name}`, err instanceof ServiceError && err.code === code && s.seen.length === 1, { err: String(err), n: s.seen.length });
      s.stop();
    }
    {
      // Nothing ever answers: tried for retryMs, then the reason.
      const start = Date.now();
      const err = await thrown(retrieve(agent, { ...opts, retryMs: 400 }, { query: "q" }));
      const took = Date.now() - start;
      check("nats retrieve: retries stop at retryMs", err instanceof Error && /no retriever answers/.test(err.message) && took >= 300 && took < 5000,
        { err: String(err), took });
    }
  } finally {
    await agent.close();
    await service.close();
  }
}
