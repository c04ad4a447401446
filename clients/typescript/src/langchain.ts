// LangChain.js integration: a chat message history, a memory and a runnable backed by agentmem.
// Needs @langchain/core (an optional peer dependency of this package).

import { BaseListChatMessageHistory } from "@langchain/core/chat_history";
import { BaseMemory, type InputValues, type MemoryVariables, type OutputValues } from "@langchain/core/memory";
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { type Runnable, RunnableLambda } from "@langchain/core/runnables";

import { type AgentmemClient, type BatchEvent, checkToken } from "./http.js";
import type { RetrieveRequest, Role, Source } from "./types.js";

/** Where a LangChain memory object lives in agentmem. */
export interface SessionOptions {
  client: AgentmemClient;
  session: string;
  /** The session's user: its facts are recalled in the user's other sessions. */
  user: string;
  /** How long a read waits for the last published turn to be applied (read your writes); default 5000 ms. */
  waitMs?: number;
}

const roleOf: Record<string, Role> = { human: "user", ai: "assistant", system: "system", tool: "tool", generic: "user" };

/** turnOf maps a LangChain message to an agentmem turn's role, content and tool. */
export function turnOf(message: BaseMessage): { role: Role; content: string; tool?: string } {
  const role = roleOf[message.getType()];
  if (!role) {
    throw new TypeError(`message: agentmem keeps human, ai, system and tool messages, not ${message.getType()}`);
  }
  const content = message.text;
  if (message instanceof ToolMessage) {
    return { role, content, tool: message.name ?? message.tool_call_id };
  }
  return { role, content };
}

/**
 * A chat message history backed by agentmem. addMessage and addMessages publish the messages
 * as turns of the session (one request for a list, in order). getMessages returns the messages
 * added through this object, oldest first, after a system message with agentmem's context for
 * `contextQuery` when it is set: the user's profile and the facts, summaries and turns agentmem
 * finds for it, from this session and the user's earlier ones. clear ends the session, so
 * agentmem extracts its facts. agentmem keeps the turns; it returns their text by relevance to a
 * query, not as a list, so a new history object for an old session starts with no messages.
 */
export class AgentmemChatMessageHistory extends BaseListChatMessageHistory {
  lc_namespace = ["agentmem", "langchain"];
  readonly client: AgentmemClient;
  readonly session: string;
  readonly user: string;
  contextQuery: string | undefined;
  contextTokens: number | undefined;
  /** The id of the last turn published: reads wait for it to be applied. */
  lastId: string | undefined;
  private readonly waitMs: number;
  private messages: BaseMessage[] = [];

  constructor(opts: SessionOptions & { contextQuery?: string; contextTokens?: number }) {
    super();
    this.client = opts.client;
    this.session = checkToken("session", opts.session);
    this.user = checkToken("user", opts.user);
    this.waitMs = opts.waitMs ?? 5000;
    this.contextQuery = opts.contextQuery;
    this.contextTokens = opts.contextTokens;
  }

  override async getMessages(): Promise<BaseMessage[]> {
    const out: BaseMessage[] = [];
    if (this.contextQuery) {
      const reply = await this.client.retrieve(this.request(this.contextQuery, this.contextTokens, ["long"]));
      if (reply.context) out.push(new SystemMessage(reply.context));
    }
    return [...out, ...this.messages];
  }

  override async addMessage(message: BaseMessage): Promise<void> {
    await this.addMessages([message]);
  }

  override async addMessages(messages: BaseMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const batch: BatchEvent[] = messages.map((m) => ({ session: this.session, user: this.user, ...turnOf(m) }));
    const results = await this.client.publishBatch(batch);
    this.messages.push(...messages);
    this.lastId = results[results.length - 1]?.id;
  }

  /** Ends the session (agentmem extracts its facts) and forgets the messages held here. */
  override async clear(): Promise<void> {
    await this.client.endSession(this.session, this.user);
    this.messages = [];
  }

  /** A retrieve request of this session and user that waits for the last published turn. */
  request(query: string, contextTokens?: number, sources?: Source[]): RetrieveRequest {
    const req: RetrieveRequest = { query, session: this.session, user: this.user };
    if (contextTokens !== undefined) req.context_tokens = contextTokens;
    if (sources) req.sources = sources;
    if (this.lastId && this.waitMs > 0) {
      req.after = this.lastId;
      req.wait_ms = this.waitMs;
    }
    return req;
  }
}

/**
 * A LangChain memory backed by agentmem: saveContext publishes the input and the output as a
 * user and an assistant turn; loadMemoryVariables returns { [memoryKey]: context }, the text
 * agentmem builds for the current input (profile, relevant facts, summaries and turns).
 */
export class AgentmemMemory extends BaseMemory {
  readonly history: AgentmemChatMessageHistory;
  memoryKey: string;
  inputKey: string;
  outputKey: string;
  contextTokens: number | undefined;

  constructor(opts: SessionOptions & { memoryKey?: string; inputKey?: string; outputKey?: string; contextTokens?: number }) {
    super();
    this.history = new AgentmemChatMessageHistory(opts);
    this.memoryKey = opts.memoryKey ?? "history";
    this.inputKey = opts.inputKey ?? "input";
    this.outputKey = opts.outputKey ?? "output";
    this.contextTokens = opts.contextTokens;
  }

  get memoryKeys(): string[] {
    return [this.memoryKey];
  }

  async loadMemoryVariables(values: InputValues): Promise<MemoryVariables> {
    const query = textOf(values, this.inputKey);
    const reply = await this.history.client.retrieve(this.history.request(query, this.contextTokens));
    return { [this.memoryKey]: reply.context };
  }

  async saveContext(inputValues: InputValues, outputValues: OutputValues): Promise<void> {
    await this.history.addMessages([
      new HumanMessage(textOf(inputValues, this.inputKey)),
      new AIMessage(textOf(outputValues, this.outputKey)),
    ]);
  }

  /** Ends the session: agentmem extracts its facts. */
  async clear(): Promise<void> {
    await this.history.clear();
  }
}

/**
 * A runnable that adds agentmem's context for the input to the input: `{ input, ... }` becomes
 * `{ input, ..., context }`, ready for a prompt template with a {context} variable. Pipe it
 * before the prompt: `agentmemContext({ client, session, user }).pipe(prompt).pipe(model)`.
 * With `history`, the retrieve waits for the history's last published turn.
 */
export function agentmemContext(opts: {
  client: AgentmemClient;
  session: string;
  user: string;
  inputKey?: string;
  contextKey?: string;
  contextTokens?: number;
  sources?: Source[];
  history?: AgentmemChatMessageHistory;
}): Runnable<Record<string, unknown>, Record<string, unknown>> {
  const session = checkToken("session", opts.session);
  const user = checkToken("user", opts.user);
  const inputKey = opts.inputKey ?? "input";
  const contextKey = opts.contextKey ?? "context";
  return RunnableLambda.from(async (input: Record<string, unknown>) => {
    const req: RetrieveRequest = opts.history
      ? opts.history.request(textOf(input, inputKey), opts.contextTokens, opts.sources)
      : { query: textOf(input, inputKey), session, user };
    if (!opts.history) {
      if (opts.contextTokens !== undefined) req.context_tokens = opts.contextTokens;
      if (opts.sources) req.sources = opts.sources;
    }
    const reply = await opts.client.retrieve(req);
    return { ...input, [contextKey]: reply.context };
  }).withConfig({ runName: "agentmemContext" });
}

function textOf(values: Record<string, unknown>, key: string): string {
  const v = values[key];
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && "text" in v && typeof (v as { text: unknown }).text === "string") {
    return (v as { text: string }).text;
  }
  throw new TypeError(`${key}: want a string (or a message), got ${v === undefined ? "nothing" : typeof v}`);
}
