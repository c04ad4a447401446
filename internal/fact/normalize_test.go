package fact

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"I  LOVE Go!!", "i love go"},
		{"  i love go  ", "i love go"},
		{"ＧＯ", "go"},
		{"Ｉ　ｌｏｖｅ　ＧＯ！", "i love go"},
		{"我最喜欢的编程语言是 Go。", "我最喜欢的编程语言是go"},
		{"我最喜欢的编程语言是Go", "我最喜欢的编程语言是go"},
		{"用户 喜欢 喝茶！", "用户喜欢喝茶"},
		{"「用户」喜欢、喝茶；真的？", "用户喜欢喝茶真的"},
		{"《三体》", "三体"},
		{"The user's name is Ana-María", "the users name is anamaría"},
		{"Straße", "strasse"},
		{"ΣΊΣΥΦΟΣ", "σίσυφοσ"},
		{"K\u212a", "kk"}, // Kelvin sign folds to k
		{"tabs\tand\nnew\r\nlines", "tabs and new lines"},
		{"zero\u200bwidth", "zerowidth"},
		{"C# and C++", "c# and c++"},
		{"C #", "c"},
		{"a + b", "a b"},
		{"I love Go 😀", "i love go 😀"},
		{"", ""},
		{"!!!", ""},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeEqualities(t *testing.T) {
	for _, pair := range [][2]string{
		{"I  LOVE Go!!", "i love go"},
		{"The user prefers tea.", "the user prefers tea"},
		{"用户喜欢喝茶。", "用户喜欢喝茶"},
		{"用户最喜欢的编程语言是 Go", "用户最喜欢的编程语言是Go！"},
		{"ＧＯ", "go"},
	} {
		if a, b := Normalize(pair[0]), Normalize(pair[1]); a != b {
			t.Errorf("Normalize(%q) = %q != Normalize(%q) = %q", pair[0], a, pair[1], b)
		}
	}
}

// TestNormalizeIdempotent is a property test: Normalize(Normalize(s)) == Normalize(s) over
// random strings drawn from an alphabet of the troublesome characters.
func TestNormalizeIdempotent(t *testing.T) {
	alphabet := []rune("aZß ẞſKİıςΣǅＡｚ０！　\t\n,.，。、！？「」#+C中文字ひカ한 \u200b\u0301😀'’-_Ééŉǰΐ")
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := r.IntN(12); n > 0; n-- {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		once := Normalize(s)
		if twice := Normalize(once); twice != once {
			t.Fatalf("Normalize not idempotent on %q: %q then %q", s, once, twice)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"I  LOVE Go!!", "ＧＯ", "我最喜欢的编程语言是 Go。", "C# c++", "İı", "\xff\xfe", "a\u200b b", "ß"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := Normalize(s)
		if twice := Normalize(once); twice != once {
			t.Fatalf("Normalize not idempotent on %q: %q then %q", s, once, twice)
		}
		if !utf8.ValidString(once) {
			t.Fatalf("Normalize(%q) = %q is not valid UTF-8", s, once)
		}
		if strings.HasPrefix(once, " ") || strings.HasSuffix(once, " ") || strings.Contains(once, "  ") {
			t.Fatalf("Normalize(%q) = %q has stray spaces", s, once)
		}
		_ = ID("t", "u", s)
	})
}

func TestID(t *testing.T) {
	a := ID("acme", "u1", "The user loves Go!")
	if !strings.HasPrefix(a, "fact_") || len(a) != len("fact_")+32 {
		t.Fatalf("ID = %q, want fact_ and 32 hex digits", a)
	}
	if b := ID("acme", "u1", "  the USER loves go  "); b != a {
		t.Errorf("ID differs for texts equal after Normalize: %q vs %q", a, b)
	}
	if b := ID("acme", "u1", "ＴＨＥ ＵＳＥＲ ＬＯＶＥＳ ＧＯ"); b != a {
		t.Errorf("ID differs for full-width text: %q vs %q", a, b)
	}
	if b := ID("acme", "u2", "The user loves Go!"); b == a {
		t.Error("ID is the same for two users")
	}
	if b := ID("other", "u1", "The user loves Go!"); b == a {
		t.Error("ID is the same for two tenants")
	}
	if b := ID("acme", "u1", "The user loves Rust"); b == a {
		t.Error("ID is the same for different facts")
	}
	// The separator keeps (tenant, user) pairs apart: "a"+"bc" is not "ab"+"c".
	if ID("a", "bc", "x") == ID("ab", "c", "x") {
		t.Error("ID does not separate tenant from user")
	}
	if ID("acme", "u1", "用户喜欢喝茶。") != ID("acme", "u1", "用户 喜欢 喝茶") {
		t.Error("ID differs for Chinese texts equal after Normalize")
	}
}

func TestKeyID(t *testing.T) {
	k := KeyID("acme", "u1", "user.city")
	if !strings.HasPrefix(k, "key_") || len(k) != len("key_")+32 {
		t.Fatalf("KeyID = %q, want key_ and 32 hex digits", k)
	}
	if KeyID("acme", "u1", " USER.CITY ") != k {
		t.Error("KeyID is not case- and space-insensitive")
	}
	if KeyID("acme", "u2", "user.city") == k || KeyID("other", "u1", "user.city") == k {
		t.Error("KeyID is shared across users or tenants")
	}
	if KeyID("acme", "u1", "user_city") == k {
		t.Error("KeyID conflates user.city and user_city")
	}
	if KeyID("acme", "u1", "user.city") == ID("acme", "u1", "user.city")[len("fact_"):] {
		t.Error("unexpected")
	}
}

func TestValidCategory(t *testing.T) {
	for _, c := range []string{CategoryPreference, CategoryIdentity, CategoryProject, CategoryDecision, CategoryOther} {
		if !ValidCategory(c) {
			t.Errorf("ValidCategory(%q) = false", c)
		}
	}
	for _, c := range []string{"", "Preference", "fact", " other"} {
		if ValidCategory(c) {
			t.Errorf("ValidCategory(%q) = true", c)
		}
	}
}
