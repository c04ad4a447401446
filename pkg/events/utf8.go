package events

import (
	"fmt"
	"unicode/utf8"
)

// JSON is UTF-8 (RFC 8259), and agentmem takes it as such everywhere: a turn, an event's JSON
// data or envelope, or a retrieve request with bytes that are not valid UTF-8 is rejected with
// the offset of the first bad byte, never stored with U+FFFD in their place (encoding/json's
// quiet repair), so that what is remembered is what was sent.

// InvalidUTF8 returns the offset of the first byte of b that does not start a valid UTF-8
// sequence, or -1 when b is valid UTF-8.
func InvalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// invalidUTF8String is InvalidUTF8 of a string.
func invalidUTF8String(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i, r := range s {
		if r == utf8.RuneError && !validRuneAt(s, i) {
			return i
		}
	}
	return -1
}

// validRuneAt reports whether s holds a valid encoding (of U+FFFD itself) at i.
func validRuneAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 3
}

// notUTF8 is the error of field, whose bytes are not valid UTF-8 from offset at on.
func notUTF8(field string, at int) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf("not valid UTF-8 at byte %d", at)}
}

// checkUTF8 returns a *FieldError naming field when b is not valid UTF-8, else nil.
func checkUTF8(field string, b []byte) error {
	if at := InvalidUTF8(b); at >= 0 {
		return notUTF8(field, at)
	}
	return nil
}

// checkValueUTF8 returns a *FieldError naming field (or its member, "metadata.key") when a string
// in v, a value decoded from JSON or built for it, is not valid UTF-8.
func checkValueUTF8(field string, v any) error {
	switch x := v.(type) {
	case string:
		if at := invalidUTF8String(x); at >= 0 {
			return notUTF8(field, at)
		}
	case map[string]any:
		for k, e := range x {
			if at := invalidUTF8String(k); at >= 0 {
				return notUTF8(field, at)
			}
			if err := checkValueUTF8(field+"."+k, e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkValueUTF8(fmt.Sprintf("%s[%d]", field, i), e); err != nil {
				return err
			}
		}
	}
	return nil
}
