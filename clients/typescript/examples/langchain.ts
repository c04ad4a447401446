import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { ChatPromptTemplate } from "@langchain/core/prompts";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { AgentmemClient } from "@agentmem/client";
import { AgentmemChatMessageHistory, agentmemContext } from "@agentmem/client/langchain";

const client = new AgentmemClient({ url: process.env.AGENTMEM_URL ?? "http://127.0.0.1:8080", tenant: "acme",
  token: process.env.AGENTMEM_TOKEN }); // no token: memoryd runs without tokens

// Session 1: the user says where they live; clear() ends the session, which extracts the facts.
const first = new AgentmemChatMessageHistory({ client, session: "lc-1", user: "erin" });
await first.addMessages([new HumanMessage("I live in Lisbon."), new AIMessage("Lisbon, noted.")]);
await first.clear();
await client.waitForFact("erin", "Lisbon"); // facts appear a moment after the end

// Session 2: agentmem's context goes into the prompt; the fake model stands in for an LLM.
const prompt = ChatPromptTemplate.fromMessages([["system", "You remember:\n{context}"], ["human", "{input}"]]);
const model = new FakeListChatModel({ responses: ["I remember."] });
const chain = agentmemContext({ client, session: "lc-2", user: "erin" }).pipe(prompt).pipe(model);
const question = "Where should I go for dinner tonight?";
const answer = await chain.invoke({ input: question }, {
  callbacks: [{ handleChatModelStart: (_llm, [messages]) => console.log(messages?.[0]?.text) }] });
const second = new AgentmemChatMessageHistory({ client, session: "lc-2", user: "erin" });
await second.addMessages([new HumanMessage(question), answer]);
