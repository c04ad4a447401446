// Publishes and retrieves over NATS while crash_test.go crashes the node leading the turns
// stream: session c0 with the NATS client (publishTurn, retrieve), session c1 with a plain nats.js
// publisher using the settings docs/protocol.md gives. It runs until its standard input closes,
// then prints one JSON line: the ids acknowledged per session and every error.
// Environment: NATS_URL (every node, the one to crash first).
import { connect, headers } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import type { JetStreamClient } from "@nats-io/jetstream";
import { publishTurn, retrieve } from "@agentmem/client/nats";

const tenant = "ts";
let stopped = false;
process.stdin.on("end", () => (stopped = true));
process.stdin.resume();

/** Publishes turn id of session as a plain nats.js publisher does, with the documented settings. */
async function publishPlain(js: JetStreamClient, session: string, id: string, content: string): Promise<void> {
  const subject = `memory.turns.${tenant}.${session}`;
  const data = JSON.stringify({ role: "user", content, user: `u-${session}` });
  const h = headers();
  for (const [k, v] of [["ce-specversion", "1.0"], ["ce-id", id], ["ce-type", "agentmem.turn.v1"], ["ce-source", "agent/plain"],
    ["ce-time", new Date().toISOString()], ["content-type", "application/json"]]) h.set(k!, v!);
  await js.publish(subject, data, { headers: h, msgID: `${tenant}.${session}.${id}`, timeout: 2000, retries: 12 });
}

const nc = await connect({ servers: process.env.NATS_URL!.split(","), noRandomize: true, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
const js = jetstream(nc);
const ids: Record<string, string[]> = { c0: [], c1: [] };
const errors: string[] = [];
let retrieves = 0;
const content = "a turn about the rollback plan of the billing service";
await Promise.all([
  (async () => {
    for (let i = 0; !stopped; i++) {
      const id = `c0-${String(i).padStart(5, "0")}`;
      try {
        await publishTurn(js, { tenant }, "c0", { id, role: "user", content, user: "u-c0" });
        ids.c0!.push(id);
      } catch (err) {
        errors.push(`publishTurn ${id}: ${(err as Error).message}`);
      }
    }
  })(),
  (async () => {
    for (let i = 0; !stopped; i++) {
      const id = `c1-${String(i).padStart(5, "0")}`;
      try {
        await publishPlain(js, "c1", id, content);
        ids.c1!.push(id);
      } catch (err) {
        errors.push(`plain ${id}: ${(err as Error).message}`);
      }
    }
  })(),
  (async () => {
    while (!stopped) {
      try {
        await retrieve(nc, { tenant }, { query: "rollback plan", session: "c0" });
        retrieves++;
      } catch (err) {
        errors.push(`retrieve: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })(),
]);
await nc.close();
console.log(JSON.stringify({ ok: errors.length === 0, ids, retrieves, errors: errors.slice(0, 20), failed: errors.length }));
