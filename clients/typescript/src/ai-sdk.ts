// Vercel AI SDK integration: a language model middleware that puts agentmem's context into the
// prompt and publishes the user's turn and the model's answer. Needs `ai` (an optional peer
// dependency of this package).

import type { LanguageModelMiddleware } from "ai";

import { type AgentmemClient, type BatchEvent, checkToken } from "./http.js";
import type { RetrieveRequest, Source } from "./types.js";

type CallOptions = Parameters<NonNullable<LanguageModelMiddleware["transformParams"]>>[0]["params"];
type Prompt = CallOptions["prompt"];

export interface MiddlewareOptions {
  client: AgentmemClient;
  session: string;
  /** The session's user: its facts are recalled in the user's other sessions. */
  user: string;
  /** The context's token budget (agentmem's default 2000). */
  contextTokens?: number;
  sources?: Source[];
  /** How long a retrieve waits for the last published turn to be applied; default 5000 ms. */
  waitMs?: number;
  /** Publish the user's message and the answer as turns (default true). */
  publish?: boolean;
  /** Put before the context in the system message (default "What you remember about the user and this conversation:"). */
  heading?: string;
}

/** The middleware returned by agentmemMiddleware; lastId is the last turn it published. */
export type AgentmemMiddleware = LanguageModelMiddleware & { readonly lastId: string | undefined };

/**
 * agentmemMiddleware is an AI SDK language model middleware for
 * `wrapLanguageModel({ model, middleware })`. Before each call (transformParams) it retrieves
 * agentmem's context for the last user message and puts it into the prompt as a system message
 * after the prompt's own system messages; after a generate or a stream (wrapGenerate,
 * wrapStream) it publishes that user message and the answer's text as two turns of the session.
 */
export function agentmemMiddleware(opts: MiddlewareOptions): AgentmemMiddleware {
  const session = checkToken("session", opts.session);
  const user = checkToken("user", opts.user);
  const waitMs = opts.waitMs ?? 5000;
  const heading = opts.heading ?? "What you remember about the user and this conversation:";
  const state: { lastId: string | undefined } = { lastId: undefined };

  const publish = async (prompt: Prompt, answer: string): Promise<void> => {
    if (opts.publish === false) return;
    const question = lastUserText(prompt);
    const batch: BatchEvent[] = [];
    if (question) batch.push({ session, user, role: "user", content: question });
    if (answer) batch.push({ session, user, role: "assistant", content: answer });
    if (batch.length === 0) return;
    const results = await opts.client.publishBatch(batch);
    state.lastId = results[results.length - 1]?.id ?? state.lastId;
  };

  return {
    specificationVersion: "v3",
    get lastId() {
      return state.lastId;
    },
    async transformParams({ params }) {
      const query = lastUserText(params.prompt);
      if (!query) return params;
      const req: RetrieveRequest = { query, session, user };
      if (opts.contextTokens !== undefined) req.context_tokens = opts.contextTokens;
      if (opts.sources) req.sources = opts.sources;
      if (state.lastId && waitMs > 0) {
        req.after = state.lastId;
        req.wait_ms = waitMs;
      }
      const reply = await opts.client.retrieve(req);
      if (!reply.context) return params;
      const at = params.prompt.findIndex((m) => m.role !== "system");
      const prompt = [...params.prompt];
      prompt.splice(at < 0 ? prompt.length : at, 0, { role: "system", content: `${heading}\n${reply.context}` });
      return { ...params, prompt };
    },
    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const answer = result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
      await publish(params.prompt, answer);
      return result;
    },
    async wrapStream({ doStream, params }) {
      const result = await doStream();
      let answer = "";
      const stream = result.stream.pipeThrough(new TransformStream({
        transform(part, controller) {
          if (part.type === "text-delta") answer += part.delta;
          controller.enqueue(part);
        },
        async flush() {
          await publish(params.prompt, answer);
        },
      }));
      return { ...result, stream };
    },
  };
}

/** The text of the prompt's last user message. */
export function lastUserText(prompt: Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i];
    if (m?.role === "user") {
      return m.content.map((p) => (p.type === "text" ? p.text : "")).join("").trim();
    }
  }
  return "";
}
