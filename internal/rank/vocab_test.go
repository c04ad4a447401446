package rank

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/search"
)

// Documents prepared with their terms numbered in a vocabulary (PrepareVocab, as a stored view
// gives them) index exactly as documents prepared from their text: the same hits with the same
// scores, under the default config and with every field on, for plain documents and for those
// with a context, a speaker and an addressee; and removing them leaves the same index.
func TestPrepareVocabIndexesAsPrepare(t *testing.T) {
	var docs []Doc
	for i := range 40 {
		d := Doc{ID: fmt.Sprintf("d%02d", i), Group: fmt.Sprintf("s%d", i%4), Pos: i, Role: []string{"user", "assistant"}[i%2], Kind: "turn",
			Text: fmt.Sprintf("turn %d: Alice asked about the %s deploy and the %s rollback; 我们讨论了部署 %d", i, []string{"kafka", "nats", "postgres"}[i%3], []string{"friday", "monday"}[i%2], i%5)}
		switch i % 4 {
		case 1:
			d.Context = "Did the postgres rollback work on Friday?"
		case 2:
			d.Speaker, d.Addressee = "Alice", "Bob"
		}
		docs = append(docs, d)
	}
	for _, cfg := range []Config{{}, {Context: 0.5, Speaker: 0.3, Mention: 0.5, ChineseWords: 1, Related: 0.2}} {
		plain, numbered := NewIndex(cfg), NewIndex(cfg)
		vocab := &Vocab{}
		seen := map[string]uint32{}
		var a, b []Prepared
		for _, d := range docs {
			a = append(a, plain.Prepare(d))
			var ids []uint32
			for _, term := range search.Terms(d.Text) {
				id, ok := seen[term]
				if !ok {
					id = uint32(len(vocab.Terms))
					seen[term] = id
					vocab.Terms = append(vocab.Terms, term)
				}
				ids = append(ids, id)
			}
			b = append(b, numbered.PrepareVocab(d, vocab, ids))
		}
		// The terms as a stored view gives them: substrings of one string, which the index
		// refers to instead of copying them.
		// The documents' ids are substrings of it too: the index keeps them without a copy.
		var ids []string
		for _, p := range b {
			ids = append(ids, p.Doc.ID)
		}
		vocab.Base = strings.Join(vocab.Terms, "") + strings.Join(ids, "")
		at := 0
		for i, term := range vocab.Terms {
			vocab.Terms[i] = vocab.Base[at : at+len(term)]
			at += len(term)
		}
		for i := range b {
			b[i].Doc.ID = vocab.Base[at : at+len(ids[i])]
			at += len(ids[i])
		}
		plain.AddPrepared(a[:20]...)
		plain.AddPrepared(a[20:]...)
		numbered.AddPrepared(b[:20]...)
		if numbered.words.kept != vocab.Base || plain.words.kept != "" {
			t.Fatalf("%+v: the vocabulary's string was not adopted (kept %d bytes of %d)", cfg, len(numbered.words.kept), len(vocab.Base))
		}
		numbered.AddPrepared(b[20:]...)
		for _, d := range numbered.docs {
			if !numbered.words.isKept(d.id) {
				t.Fatalf("%+v: document %q was copied, not kept in the vocabulary's string", cfg, d.id)
			}
		}
		for _, q := range []string{"postgres rollback", "what did Alice ask Bob about kafka?", "部署", "friday deploy of nats"} {
			if got, want := numbered.Search(q, 10), plain.Search(q, 10); !reflect.DeepEqual(got, want) {
				t.Errorf("%+v %q: numbered terms give\n%+v\nwhere the text gives\n%+v", cfg, q, got, want)
			}
		}
		plain.RemoveDocs(docs[:30]...)
		numbered.RemoveDocs(docs[:30]...)
		if got, want := numbered.Search("postgres rollback", 10), plain.Search("postgres rollback", 10); !reflect.DeepEqual(got, want) || plain.Len() != 10 || numbered.Bytes() != plain.Bytes() {
			t.Errorf("%+v after removals: %+v (%d bytes), want %+v (%d bytes)", cfg, got, numbered.Bytes(), want, plain.Bytes())
		}
		// Postings trimmed to their size (Compact) grow out of their windows and shrink in them:
		// the removed documents come back one by one, then every other document goes again.
		numbered.Compact()
		for i := range 30 {
			plain.AddPrepared(plain.Prepare(docs[i]))
			numbered.AddPrepared(b[i])
		}
		for i := 0; i < len(docs); i += 2 {
			plain.RemoveDocs(docs[i])
			numbered.RemoveDocs(docs[i])
		}
		for _, q := range []string{"postgres rollback", "what did Alice ask Bob about kafka?", "部署", "friday deploy of nats"} {
			if got, want := numbered.Search(q, 10), plain.Search(q, 10); !reflect.DeepEqual(got, want) || numbered.Bytes() != plain.Bytes() || numbered.Len() != 20 {
				t.Errorf("%+v %q after re-adding and removing: %+v (%d bytes, %d docs), want %+v (%d bytes)", cfg, q, got, numbered.Bytes(), numbered.Len(), want, plain.Bytes())
			}
		}
	}
}
