// Package search splits text into the keyword terms that keyword search matches, in English
// and in Chinese (Japanese and Korean too) alike.
//
// [Terms] turns text into index terms: words for alphabetic scripts, and character unigrams
// plus bigrams for Han, kana and Hangul, which are written without spaces. Package rank scores
// documents and queries over these terms (BM25), and package summarize picks sentences by them.
// Terms needs neither a dictionary nor a model.
//
// [Words] segments Chinese into words with a dictionary (jieba's, MIT; embedded, 749 KB, and
// read on first use; README.md in this folder), for rank's optional word terms
// (rank.Config.ChineseWords).
//
// Everything here is deterministic.
package search
