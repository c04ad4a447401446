package events

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// ErrInvalid marks permanent bad input: every validation and decoding error
// of this package wraps it, so callers test with errors.Is(err, ErrInvalid)
// and terminate (never retry) the message that caused it.
var ErrInvalid = errors.New("events: invalid input")

// TokenPattern describes the tenant, session and user tokens accepted by
// ValidateToken and the subject builders.
const TokenPattern = "[A-Za-z0-9_-]{1,64}"

// maxTokenLen is the longest tenant, session or user token.
const maxTokenLen = 64

// maxQuotedValue is how many characters of an offending value a FieldError
// repeats before cutting it short.
const maxQuotedValue = 80

// FieldError is a validation error that names the wrong field; it wraps
// ErrInvalid.
//
// Error reads like `tenant "a.b": must match [A-Za-z0-9_-]{1,64}` when the
// error was built with the offending value (as ValidateToken does), and like
// `limit: must be between 1 and 200` otherwise.
type FieldError struct {
	// Field is the name of the field, attribute or header that is wrong,
	// e.g. "tenant", "limit", "ce-time".
	Field string
	// Message says what is wrong, without the field name.
	Message string

	// quoted is the offending value, quoted and cut to maxQuotedValue
	// characters; empty when the error does not repeat the value.
	quoted string
}

// fieldErrorValue returns a FieldError that repeats the offending value.
func fieldErrorValue(field, value, message string) *FieldError {
	return &FieldError{Field: field, Message: message, quoted: quoteValue(value)}
}

// Error returns `<field> "<value>": <message>`, or `<field>: <message>` when
// no value was recorded.
func (e *FieldError) Error() string {
	switch {
	case e.Field == "":
		return e.Message
	case e.quoted != "":
		return e.Field + " " + e.quoted + ": " + e.Message
	default:
		return e.Field + ": " + e.Message
	}
}

// Unwrap returns ErrInvalid, so errors.Is(err, ErrInvalid) holds for every
// FieldError.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// invalidError is a decoding error without a single field to name; it wraps
// ErrInvalid.
type invalidError string

func (e invalidError) Error() string { return string(e) }
func (e invalidError) Unwrap() error { return ErrInvalid }

// quoteValue quotes v for an error message, cut to maxQuotedValue characters.
func quoteValue(v string) string {
	if utf8.RuneCountInString(v) > maxQuotedValue {
		n := 0
		for i := range v {
			if n == maxQuotedValue {
				v = v[:i] + "…"
				break
			}
			n++
		}
	}
	return strconv.Quote(v)
}

// ValidateToken checks that value, the field named field, is a valid tenant,
// session or user token: 1 to 64 characters from [A-Za-z0-9_-]. It returns nil
// or a *FieldError such as `tenant "a.b": must match [A-Za-z0-9_-]{1,64}`.
func ValidateToken(field, value string) error {
	if !isToken(value) {
		return fieldErrorValue(field, value, "must match "+TokenPattern)
	}
	return nil
}

// isToken reports whether s matches TokenPattern.
func isToken(s string) bool {
	if len(s) == 0 || len(s) > maxTokenLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
