package search

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"spaces", " \t\n　 ", nil},
		{"ascii punctuation", "... --- !!! (?) 'quote'?", []string{"quote"}},
		{"cjk punctuation", "，。！？、：；“”‘’（）【】《》…", nil},
		{"stop words only", "What is it? It is what it is.", nil},
		{"english sentence",
			"I love writing Go, it's my favourite language",
			[]string{"love", "write", "go", "favourite", "language"}},
		{"english question",
			"What is my favourite programming language?",
			[]string{"favourite", "program", "language"}},
		{"possessive", "My sister's favourite food is pizza",
			[]string{"sister", "favourite", "food", "pizza"}},
		{"curly apostrophe possessive", "Bob’s cats’ toys",
			[]string{"bob", "cat", "toy"}},
		{"contractions", "I'm sure you're right, we'll see; I've said I'd come",
			[]string{"sure", "right", "see", "said", "come"}},
		{"negative contractions", "I don't like it, she isn't here and they can't come",
			[]string{"like", "here", "come"}},
		{"other apostrophes split", "rock'n'roll at five o'clock",
			[]string{"rock", "n", "roll", "five", "o", "clock"}},
		{"hyphens split", "state-of-the-art e-mail",
			[]string{"state", "art", "e", "mail"}},
		{"numbers", "Room 42, v1.2 on 2024-05-01",
			[]string{"room", "42", "v1", "2", "2024", "05", "01"}},
		{"case folding", "HELLO Hello hello", []string{"hello", "hello", "hello"}},
		{"unicode case folding", "ΣΊΣΥΦΟΣ σίσυφος ÉCOLE Straße",
			[]string{"σίσυφοσ", "σίσυφοσ", "école", "straße"}},
		{"full-width ascii", "Ｈｅｌｌｏ，ＷＯＲＬＤ！　１２３",
			[]string{"hello", "world", "123"}},

		{"chinese statement", "我最喜欢的编程语言是 Go", []string{
			"我最", "最", "最喜", "喜", "喜欢", "欢", "欢的", "的编", "编", "编程",
			"程", "程语", "语", "语言", "言", "言是", "go"}},
		{"chinese question drops 什么", "我最喜欢的编程语言是什么？", []string{
			"我最", "最", "最喜", "喜", "喜欢", "欢", "欢的", "的编", "编", "编程",
			"程", "程语", "语", "语言", "言", "言是"}},
		{"full-width latin in chinese", "ＧＯ语言", []string{"go", "语", "语言", "言"}},
		{"nonce inside chinese", "取件码改成了zq3k0x8ab1，明天", []string{
			"取", "取件", "件", "件码", "码", "码改", "改", "改成", "成", "成了",
			"zq3k0x8ab1", "明", "明天", "天"}},
		{"one han character", "猫", []string{"猫"}},
		{"one function character", "是", nil},
		{"punctuation splits runs", "你好，世界", []string{"你好", "好", "世", "世界", "界"}},
		{"japanese", "東京タワー", []string{
			"東", "東京", "京", "京タ", "タ", "タワ", "ワ", "ワー", "ー"}},
		{"japanese particles", "猫が好き", []string{"猫", "猫が", "が好", "好", "好き", "き"}},
		{"korean", "안녕하세요 세계", []string{
			"안", "안녕", "녕", "녕하", "하", "하세", "세", "세요", "요", "세", "세계", "계"}},
		{"hangul and han are separate runs", "韓國한국", []string{"韓", "韓國", "國", "한", "한국", "국"}},
		{"ideographic zero and iteration mark", "二〇二四年 人々", []string{
			"二", "二〇", "〇", "〇二", "二", "二四", "四", "四年", "年", "人", "人々", "々"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Terms(tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Terms(%q)\n got %q\nwant %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestTermsShared checks that a question and the statement that answers it share their
// content terms, in either language.
func TestTermsShared(t *testing.T) {
	tests := []struct {
		query, doc string
		missing    []string // query terms not in the doc
	}{
		{"What is my favourite programming language?",
			"I love programming in Go, my favourite language", nil},
		{"我最喜欢的编程语言是什么？", "我最喜欢的编程语言是 Go", nil},
		{"ＧＯ语言好用吗", "Go语言很好用", []string{"言好", "用吗"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			doc := Terms(tt.doc)
			var missing []string
			for _, q := range Terms(tt.query) {
				if !slices.Contains(doc, q) {
					missing = append(missing, q)
				}
			}
			if !slices.Equal(missing, tt.missing) {
				t.Errorf("query terms missing from Terms(%q) = %q: got %q, want %q",
					tt.doc, doc, missing, tt.missing)
			}
		})
	}
}

// FuzzTerms checks the invariants of Terms on any input: no empty terms, no terms with
// spaces or separators, valid UTF-8 out of valid UTF-8 in, the same result every time.
func FuzzTerms(f *testing.F) {
	for _, s := range []string{
		"", "I love writing Go, it's my favourite language", "我最喜欢的编程语言是什么？",
		"ＧＯ语言", "取件码改成了zq3k0x8ab1，明天", "東京タワー", "안녕하세요", "don't'", "'s",
		"a'b'c'd", "か\u3099", "\u0301e\u0301", "\xff\xfe", "ing ed ies sses",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		terms := Terms(text)
		for _, term := range terms {
			if term == "" {
				t.Fatalf("Terms(%q) has an empty term: %q", text, terms)
			}
			if utf8.ValidString(text) && !utf8.ValidString(term) {
				t.Fatalf("Terms(%q) has invalid UTF-8 term %q", text, term)
			}
			if strings.ContainsFunc(term, func(r rune) bool {
				return unicode.IsSpace(r) || unicode.IsPunct(r) || r == utf8.RuneError
			}) {
				t.Fatalf("Terms(%q) has term %q with a separator", text, term)
			}
		}
		if again := Terms(text); !slices.Equal(terms, again) {
			t.Fatalf("Terms(%q) not deterministic: %q then %q", text, terms, again)
		}
	})
}

// termsRuneByRune is Terms with every byte taken through the general path (rune decoding,
// width and case folding): what the ASCII short path must agree with.
func termsRuneByRune(text string) []string {
	t := tokenizer{text: text}
	t.split(false)
	return t.out
}

// The ASCII short path of the tokenizer gives the terms of the general path.
func FuzzFastTermsAgree(f *testing.F) {
	for _, s := range []string{"", "I love writing Go, it's my favourite language", "Bob’s cats’ TOYS don't", "ＧＯ Straße İstanbul ǅemal",
		"rock'n'roll o'clock", "取件码改成了zq3k0x8ab1，明天", "ABC'S x'", "naïve Café CAFÉ\u0301", "a\u0300b'c'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := Terms(text), termsRuneByRune(text); !slices.Equal(got, want) && (len(got) > 0 || len(want) > 0) {
			t.Fatalf("Terms(%q) = %q, the general path gives %q", text, got, want)
		}
	})
}
