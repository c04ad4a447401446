import { generateText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { AgentmemClient } from "@agentmem/client";
import { agentmemMiddleware } from "@agentmem/client/ai-sdk";

const client = new AgentmemClient({ url: process.env.AGENTMEM_URL ?? "http://127.0.0.1:8080", tenant: "acme",
  token: process.env.AGENTMEM_TOKEN }); // no token: memoryd runs without tokens

// The mock model stands in for an LLM: it answers "Noted." and records the prompts it was sent.
const tokens = { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0, text: 1, reasoning: 0 };
const llm = new MockLanguageModelV3({ doGenerate: { content: [{ type: "text", text: "Noted." }], warnings: [],
  finishReason: { unified: "stop", raw: "stop" }, usage: { inputTokens: tokens, outputTokens: tokens } } });
// The middleware puts agentmem's context into the prompt and publishes the user's turn and the answer.
const chat = (session: string) =>
  wrapLanguageModel({ model: llm, middleware: agentmemMiddleware({ client, session, user: "frank" }) });

// Session 1: the user names their favourite language; ending the session extracts the facts.
await generateText({ model: chat("ai-1"), prompt: "My favourite language is Go." });
await client.endSession("ai-1", "frank");
await client.waitForFact("frank", "language"); // facts appear a moment after the end

// Session 2: the prompt the model is sent carries what agentmem remembers.
await generateText({ model: chat("ai-2"), prompt: "Which language should I write the new service in?" });
console.log(llm.doGenerateCalls.at(-1)?.prompt[0]?.content);
