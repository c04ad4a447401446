// Package summarize is the compressor's summariser: it turns a session's oldest entries (the
// previous summary first, if there is one) into one summary that fits a token cap.
//
// # Map-Reduce
//
// The entries are formatted one per line (position, time, role and tool name, text) and split in
// arrival order into groups of five. Map: each group is summarised by one LLM call, a few calls
// at a time. Reduce: when there is more than one partial summary, one more call merges them in
// order; a single partial summary is the result as it is. n entries therefore cost exactly
// ceil(n/5) + (1 if n > 5) calls. An answer that overruns the cap is cut to it, sentence by
// sentence, with Extractive. Errors are returned, never a partial summary: retrying is the
// worker's decision.
//
// # Without an LLM
//
// When no LLM is configured the same steps run with Extractive, a deterministic sentence
// extractor over search.Terms: each group keeps its best sentences, then the best of those that
// fit the cap, in their original order. Result.Summarizer says which summariser wrote a summary
// ("llm:<model>" or "extractive"), for the summary event's metadata.
//
// # Cutting
//
// Tool output is mostly noise to a summary, so tool results are cut hard before anything reads
// them: the tool name and the command are kept, then the first 600 and last 400 characters of
// the output around a "… [N chars cut] …" line (CutTool). Conversation entries are cut much less,
// to 4,000 characters; summaries never.
//
// # Languages
//
// A conversation whose text is at least a fifth Han characters is Chinese (Language): its
// summary is written by Chinese prompts, in Chinese, and starts with "[历史对话摘要] ";
// any other starts with "[Conversation summary] ". The prompts ask the model to keep names,
// numbers, dates, decisions, preferences, facts about the user and open tasks, never to
// translate names or to invent anything, and to carry the previous summary's content forward.
package summarize
