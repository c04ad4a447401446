// Package search scores how well stored text matches a query by its keywords, in English and
// in Chinese (Japanese and Korean too) alike.
//
// It has two parts. [Terms] turns text into index terms: words for alphabetic scripts, and
// character unigrams plus bigrams for Han, kana and Hangul, which are written without spaces.
// [Index] is an in-memory BM25 index over such terms whose scores are normalised to (0,1], so
// that the retriever can fuse keyword relevance with vector similarity, time decay and source
// weight.
//
// Everything here is deterministic and needs neither a dictionary nor a model.
package search
