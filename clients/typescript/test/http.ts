// Checks the HTTP client against a real memoryd (node_test.go runs it): every route, the typed
// errors and the two framework integrations beyond what the examples show. Prints one JSON line.
import { streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { AgentmemClient, AgentmemError, AuthenticationError, BadRequestError, NotFoundError, ServiceUnavailableError, TurnRejectedError } from "@agentmem/client";
import { agentmemMiddleware } from "@agentmem/client/ai-sdk";
import { AgentmemMemory } from "@agentmem/client/langchain";

const url = process.env.AGENTMEM_URL ?? "http://127.0.0.1:8080";
const mem = new AgentmemClient({ url, tenant: "acme", token: process.env.AGENTMEM_TOKEN });
const checks: string[] = [];
function check(name: string, ok: boolean, got?: unknown): void {
  if (!ok) throw new Error(`${name}: got ${JSON.stringify(got)}`);
  checks.push(name);
}
async function rejects<T extends Error>(name: string, p: Promise<unknown>, cls: new (...a: never[]) => T, want: (e: T) => boolean): Promise<void> {
  try {
    await p;
  } catch (err) {
    return check(name, err instanceof cls && err instanceof AgentmemError && want(err), { name: (err as Error).name, message: (err as Error).message });
  }
  check(name, false, "no error");
}

try {
  const a = await mem.publish("t-1", { id: "t-1-a", role: "user", content: "I live in Porto.", user: "gina" });
  check("publish", a.id === "t-1-a" && a.session === "t-1" && a.seq > 0 && !a.duplicate, a);
  check("publish again is a duplicate", (await mem.publish("t-1", { id: "t-1-a", role: "user", content: "I live in Porto.", user: "gina" })).duplicate);
  const batch = await mem.publishBatch([{ session: "t-1", role: "assistant", content: "Porto, noted." }, { session: "t-1", end: true, user: "gina", id: "t-1-end" }]);
  check("batch", batch.length === 2 && batch[1]?.id === "t-1-end", batch);
  await rejects("invalid batch names the event", mem.publishBatch([{ session: "t-1", role: "user", content: "ok" }, { session: "t-1", role: "robot" as "user", content: "x" }]),
    BadRequestError, (e) => e.status === 400 && e.index === 1 && e.field === "role");
  const r = await mem.retrieve({ query: "Porto", session: "t-1", after: "t-1-end", wait_ms: 5000, types: ["CONVERSATION"] });
  check("retrieve reads its writes", r.entries.some((e) => e.id === "t-1-a" && e.content.includes("Porto") && typeof e.scores.keyword === "number"), r);
  await rejects("empty query is a 400 on query", mem.retrieve({ query: "" }), BadRequestError, (e) => e.field === "query");
  check("event status", (await mem.eventStatus("t-1", "t-1-a")).status === "applied");
  const s = await mem.session("t-1");
  check("session", s.user === "gina" && s.turns === 2 && s.ended, s);
  await rejects("unknown session is a 404", mem.session("t-none"), NotFoundError, (e) => e.status === 404);
  await rejects("a wrong token is a 401", new AgentmemClient({ url, tenant: "acme", token: "wrong" }).session("t-1"), AuthenticationError, (e) => e.status === 401);
  const bad = await mem.session("no/such").then(() => undefined, (e: unknown) => e);
  check("a bad session name is refused, naming the field", bad instanceof TypeError && bad.message.startsWith("session: "), String(bad));

  // A first turn without a user: the gateway refuses it before storing it...
  await rejects("a first turn without a user is a 400 on user", mem.publish("t-3", { id: "t-3-a", role: "user", content: "hello" }),
    BadRequestError, (e) => e.status === 400 && e.field === "user");
  // ... and ingest rejects one published over NATS (examples_test.go did, in session t-2):
  // status, retrieve after it, dead letters.
  await rejects("after a rejected turn", mem.retrieve({ query: "hello", session: "t-2", after: "t-2-a", wait_ms: 5000 }),
    TurnRejectedError, (e) => e.field === "after" && e.detail.includes("t-2-a"));
  // A turn not applied within wait_ms (never published here): a 503 on after, the field named once.
  await rejects("after not applied in time", mem.retrieve({ query: "x", session: "t-4", after: "t-4-never", wait_ms: 50 }),
    ServiceUnavailableError, (e) => e.status === 503 && e.field === "after" && e.detail.includes('"t-4-never"') &&
      e.message.split("after:").length === 2);
  check("rejected status", (await mem.eventStatus("t-2", "t-2-a")).status === "rejected");
  check("dead letters", (await mem.deadLetters({ session: "t-2", limit: 5 })).some((d) => d.id === "t-2-a"));

  const fact = await mem.waitForFact("gina", "Porto");
  check("fact", (await mem.fact("gina", fact.id)).content === fact.content);
  const corrected = await mem.correctFact("gina", fact.id, "The user lives in Braga");
  check("correct", corrected.content.includes("Braga") && corrected.id !== fact.id, corrected);
  check("history", (await mem.facts("gina", { history: true })).some((f) => f.id === fact.id && f.state === "superseded"));
  check("delete", (await mem.deleteFact("gina", corrected.id)).state === "deleted");

  // LangChain memory: saveContext publishes, loadMemoryVariables reads the context after it.
  const memory = new AgentmemMemory({ client: mem, session: "t-3", user: "hank" });
  await memory.saveContext({ input: "I play the cello." }, { output: "Lovely." });
  const vars = await memory.loadMemoryVariables({ input: "Which instrument do I play?" });
  check("langchain memory", String(vars.history).includes("cello"), vars);

  // AI SDK streaming: the middleware publishes the streamed answer once the stream ends.
  const chunks = ["Cel", "lo ", "it is."].map((delta) => ({ type: "text-delta" as const, id: "1", delta }));
  const llm = new MockLanguageModelV3({ doStream: { stream: simulateReadableStream({ chunks: [{ type: "text-start", id: "1" }, ...chunks, { type: "text-end", id: "1" },
    { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } } }] }) } });
  const mw = agentmemMiddleware({ client: mem, session: "t-3", user: "hank" });
  const res = streamText({ model: wrapLanguageModel({ model: llm, middleware: mw }), prompt: "What do I play?" });
  check("stream", (await res.text) === "Cello it is.");
  await res.consumeStream();
  const sys = llm.doStreamCalls[0]?.prompt[0];
  check("stream prompt has the context", sys?.role === "system" && String(sys.content).includes("cello"), sys);
  const after = await mem.retrieve({ query: "cello", session: "t-3", after: mw.lastId, wait_ms: 5000, types: ["CONVERSATION"] });
  check("streamed answer published", after.entries.some((e) => e.content === "Cello it is."), after.entries);

  check("forget", ((await mem.forget("gina")).turns ?? 0) >= 2);
  console.log(JSON.stringify({ ok: true, checks }));
} catch (err) {
  console.error(err);
  console.log(JSON.stringify({ ok: false, error: (err as Error).message, checks }));
  process.exitCode = 1;
}
