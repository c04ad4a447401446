// Package rank ranks the documents of one user's memory (archived conversation turns and
// long-term entries) for a query, offline: no model, no network, no training step. The
// retriever keeps one [Index] per user and source, adds turns as they are ingested, and fuses
// each hit's Relevance with time decay and source weight.
//
// # Method
//
// Terms come from internal/search ([search.Terms]: folded, stop-worded, lightly stemmed
// English words; Han, kana and Hangul as character unigrams and bigrams). For a query q with
// distinct terms t, each repeated qtf(t) times, and a document d of session g:
//
//	w(t)      = (k3+1)·qtf / (k3+qtf)                                        query tf saturation
//	bm25(t,x) = idf(t)·tf(t,x)·(k1+1) / (tf(t,x) + k1·(1 − b + b·|x|/avg|x|))
//	idf(t)    = ln(1 + (N − df(t) + 0.5)/(df(t) + 0.5))
//	turn(d)    = ρ(d) · Σ_t w(t)·bm25(t,d)        / Σ_t w(t)·idf(t)·(k1+1)
//	session(g) =        Σ_t w(t)·bm25_S(t,g)      / Σ_t w(t)·idf_S(t)·(k1+1)
//	keyword(d) = (turn(d) + λ·session(g)) / (1+λ)     (turn(d) for a document without a group)
//	relevance(d) = keyword(d) · γ^n(d)
//
// bm25 counts over documents (N documents); bm25_S treats a session as one document, the
// concatenation of its turns (N sessions, df over sessions, lengths against the average
// session). ρ(d) is AgentTurn (0.5) for a turn whose role is neither "user" nor "" and 1
// otherwise. n(d) is the number of documents of d's session with a higher keyword score (ties
// by id). The denominators are the scores of a perfect match (every query term at
// saturation), so keyword and relevance lie in [0,1] and are comparable across indexes; a
// query term missing from the index counts in them with the highest idf. Defaults: k1 = 1.2,
// b = 0.75, k3 = k1, ρ = 0.5, λ = 1, γ = 0.75; a query with more than 64 known terms is scored
// by the 64 with the highest w(t)·idf(t) (the others, the most common, only count in the
// denominator), which bounds the cost of a whole dialogue used as a query.
//
// Why each part (TestDevSets in eval_test.go measures them, alone and left out):
//
//   - Query tf saturation: long queries (a dialogue) favour their recurring terms without
//     letting one dominate. MADial recall@10 zh 0.658 → 0.668, en 0.650 → 0.669 (the final
//     method, with the 64-term cap, 0.680 and 0.669). No effect on questions.
//   - Query line weights: a query of several lines is a dialogue, oldest first ([ParseQuery]);
//     a line marked "assistant:" (any role but the user's) counts its terms at QuerySpeaker
//     (0.4) in qtf. MADial R@1 zh 0.305 → 0.322, en 0.275 → 0.297, R@10 unchanged (0.680,
//     0.669 → 0.673). A recency factor per line (QueryRecency) is available, off: it did not
//     help. Restricted pseudo-relevance feedback (top 1-3 documents, weight 0.1-0.3) lost
//     0.01-0.05 of R@10 (docs/retrieval.md).
//   - The agent-turn weight: what a user's memory must recall is mostly what the user said;
//     agent turns are long and match many query terms. LongMemEval T-R_any@10 0.878 → 0.898
//     alone; without it the final method loses 0.07 of T-R_any@10.
//   - Session evidence: a turn in a session about the query's topic beats an equal turn in an
//     unrelated one. Alone it helps T-R_any (→ 0.908) but crowds the top with one session.
//   - Session diversity: each further turn of a session ranked above costs a factor γ, so the
//     top k spans sessions; alone it lifts S-R_all@10 to 0.918 but costs T-R_any. With
//     session evidence the two are complementary: S-R_all@10 0.888 → 0.918, T-R_any@10
//     0.878 → 0.939, and @5 0.745 → 0.888 and 0.806 → 0.888.
//
// Measured and left out, because they did not help or cost more than they gave: neighbour
// context (a turn's field also holding its neighbours' terms, BM25F) and turn-pair
// documents, both of which crowd the top with one session; RM3 pseudo-relevance feedback
// (worse on both sets); word-pair phrases; and, as an offline vector part, LSA (rank 100,
// over the user's own documents) and character n-gram TF-IDF cosine, each fused with the
// keyword score: +0.01 or +0.02 here and there alone, and between −0.01 and +0.01 on top of
// the final method, for a dense vector per document and, for LSA, a periodic SVD. So
// Hit.HasVector is false: with no model there is no vector part worth its cost.
//
// Doc.Pos, Doc.Time and Doc.Kind are kept for callers and later methods; the ranking does not
// use them (time decay is the retriever's).
//
// # Cost
//
// Everything is kept up to date by Add and Remove: postings (term → documents, with term
// frequency), each document's length and group, and each group's length; there is nothing to
// rebuild. A search walks the postings of the query's terms once (documents and sessions
// together), then selects the top k through a heap in keyword order, stopping as soon as no
// later document can enter it. BenchmarkSearch10k: 10,000 turns, top 20, about 0.2 ms for a
// question, 0.4 ms for a 1,000-character dialogue on one core; about 4 KB per (long) document of
// that benchmark (see [Index.Bytes]).
//
// Memory is what an index costs most of, so its records are compact: a posting entry packs the
// document's slot (24 bits) and the term's frequency in it (8 bits, saturated at 255: BM25 has
// long stopped growing there); terms are found through an open-addressing table of term ids
// that reads each term from its posting (4 bytes a slot, where a map[string]int32 kept another
// string header and about twenty bytes per entry).
// A document keeps no list of its terms (4 bytes a distinct term and a slice header: a fifth of
// the index per document, BenchmarkSearch10k's index-bytes/doc 3,365 → 2,713): RemoveDocs finds a
// document's entries through the terms of the text it was added with (about 0.1 ms to add and
// remove a turn in an index of 10,000, BenchmarkAddRemove), and Remove, given ids alone, looks
// through every posting (1.5 ms there), once for all the ids it is given.
package rank
