package eval

import (
	"fmt"
	"regexp"
)

var badTokenChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Token maps s onto a valid subject token, [A-Za-z0-9_-]{1,64}: every other character becomes
// "_", and a value longer than 64 characters keeps a 55-character prefix plus "_" and an FNV-1a
// hash of s, so that long values stay distinct. It is the mapping memprobe uses, so that users,
// sessions and turn ids are the same in both tools.
func Token(s string) string {
	t := badTokenChars.ReplaceAllString(s, "_")
	if t == "" {
		t = "_"
	}
	if len(t) > 64 {
		t = t[:55] + "_" + fnv32(s)
	}
	return t
}

func fnv32(s string) string {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return fmt.Sprintf("%08x", h)
}
