// agent.ts — a small agent that exercises agentmem from TypeScript end to end.
//
// Environment: NATS_URL, TENANT, SESSION, USER. It publishes three turns (one in Chinese),
// checks each PubAck (and that a retried publish is deduplicated), ends the session, retrieves
// the Chinese turn with read-your-writes (after + wait_ms), sends an invalid request (empty
// query) and expects a 400 service error; then publishes a turn ingest must reject (no user on a
// new session) and expects a retrieve with that turn as `after` to fail at once with a
// TurnRejectedError. It prints one JSON line with what it found and exits
// 0, or prints {"ok":false,"error":…}, the reason on stderr, and exits 1.

import { connect, headers } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";

import { endSession, publishTurn, retrieve, ServiceError, TurnRejectedError } from "./agentmem.js";
import type { Ack, Options, Turn } from "./agentmem.js";

/** The whole run is bounded: a hung call fails the agent instead of hanging its caller. */
const DEADLINE_MS = 60_000;

class Failure extends Error {}

function fail(reason: string): never {
  throw new Failure(reason);
}

function env(name: string): string {
  const v = process.env[name];
  if (!v) fail(`${name} is not set`);
  return v;
}

async function run(): Promise<Record<string, unknown>> {
  const url = env("NATS_URL");
  const tenant = env("TENANT");
  const session = env("SESSION");
  const user = env("USER");
  const opts: Options = { tenant, source: "agent/typescript-example", timeoutMs: 5000 };

  let nc: NatsConnection | undefined;
  try {
    try {
      nc = await connect({ servers: url, name: "agentmem-typescript-agent", timeout: 5000, maxReconnectAttempts: 0 });
    } catch (err) {
      fail(`connecting to ${url}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const js = jetstream(nc);

    const planted = "请记住：我的护照放在书房左边第二个抽屉里。";
    const turns: Turn[] = [
      { role: "user", content: "Hi! I am planning a trip to Japan next month and need help packing.", user },
      { role: "user", content: planted, user },
      { role: "assistant", content: "Noted: your passport is in the second drawer on the left in the study.", user },
    ];
    const acks: Ack[] = [];
    const times: string[] = [];
    for (const turn of turns) {
      turn.time = new Date();
      times.push(turn.time.toISOString());
      const ack = await publishTurn(js, opts, session, turn);
      if (ack.seq <= 0 || ack.stream === "") fail(`PubAck for turn ${ack.id} names no stream sequence: ${JSON.stringify(ack)}`);
      if (ack.duplicate) fail(`turn ${ack.id} was stored before (a fresh UUID must not be a duplicate)`);
      acks.push(ack);
    }
    const plantedAck = acks[1]!;

    // A retried publish (same id, hence the same Nats-Msg-Id) is stored once.
    const retry = await publishTurn(js, opts, session, { ...turns[1]!, id: plantedAck.id });
    if (!retry.duplicate || retry.seq !== plantedAck.seq) {
      fail(`retried publish of ${plantedAck.id} was not deduplicated: ${JSON.stringify(retry)}`);
    }

    const ended = await endSession(js, opts, session, user);
    if (ended.seq <= 0 || ended.duplicate) fail(`bad PubAck for the session end: ${JSON.stringify(ended)}`);

    const last = acks[acks.length - 1]!;
    const reply = await retrieve(nc, opts, { query: "我的护照放在哪里？", session, user, after: last.id, wait_ms: 5000 });
    const top = reply.entries[0];
    if (!top) fail(`retrieve returned no entries: ${JSON.stringify(reply)}`);
    if (top.id !== plantedAck.id || top.content !== planted) {
      fail(`top entry is ${JSON.stringify({ id: top.id, content: top.content })}, want turn ${plantedAck.id}`);
    }

    let badRequest: { code: number; field?: string; message: string } | undefined;
    try {
      await retrieve(nc, opts, { query: "", session, user });
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      badRequest = { code: err.code, field: err.field, message: err.detail };
    }
    if (!badRequest) fail("a request with an empty query was answered, want a 400 service error");
    if (badRequest.code !== 400) fail(`empty query: service error ${badRequest.code}, want 400`);

    // A first turn without a user (publishTurn would refuse it: published raw, as a careless
    // agent would) is stored, then rejected by ingest; a retrieve waiting for it learns why.
    const badSession = `${session}-bad`;
    const badID = "ts-bad-turn";
    const h = headers();
    for (const [k, v] of Object.entries({ "ce-specversion": "1.0", "ce-id": badID, "ce-type": "agentmem.turn.v1",
      "ce-source": "agent/typescript-example", "ce-time": new Date().toISOString(), "content-type": "application/json" })) {
      h.set(k, v);
    }
    await js.publish(`memory.turns.${tenant}.${badSession}`, JSON.stringify({ role: "user", content: "no user here" }),
      { headers: h, msgID: `${tenant}.${badSession}.${badID}`, timeout: 5000 });
    let rejected: { code: number; field?: string; message: string } | undefined;
    try {
      await retrieve(nc, opts, { query: "anything", session: badSession, after: badID, wait_ms: 20000 });
    } catch (err) {
      if (!(err instanceof TurnRejectedError)) throw err;
      rejected = { code: err.code, field: err.field, message: err.detail };
    }
    if (!rejected) fail(`a retrieve after the rejected turn ${badID} was answered, want a TurnRejectedError`);

    return {
      ok: true,
      tenant,
      session,
      turns: acks.map((a, i) => ({ id: a.id, stream: a.stream, seq: a.seq, time: times[i] })),
      retry_duplicate: retry.duplicate,
      session_end: { id: ended.id, seq: ended.seq },
      planted: { id: plantedAck.id, content: planted, time: times[1] },
      top: { id: top.id, type: top.type, source: top.source, content: top.content, timestamp: top.timestamp, score: top.score },
      entries: reply.entries.length,
      bad_request: badRequest,
      rejected_after: rejected,
    };
  } finally {
    if (nc) await nc.drain().catch(() => nc?.close());
  }
}

const timer = setTimeout(() => {
  report({ ok: false, error: `the agent did not finish within ${DEADLINE_MS} ms` });
  process.exit(1);
}, DEADLINE_MS);
timer.unref();

function report(line: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(line) + "\n");
}

run().then(
  (found) => {
    report(found);
    process.exit(0);
  },
  (err: unknown) => {
    const reason = err instanceof Error ? err.message : String(err);
    report({ ok: false, error: reason });
    process.stderr.write(`agent: ${reason}\n`);
    process.exit(1);
  },
);
