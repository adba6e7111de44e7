package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Text from a store or a server (a tag's description, a status line, an
// error message) is printed through printable: a terminal takes ESC, the
// C1 controls and their kin for commands (retitle, clear, rewrite what
// was printed before), and bidirectional controls reorder what it shows.

// printable returns s with every non-printing rune but those in keep
// escaped as Go writes it (\x1b, \u009b, \a), and every byte of invalid
// UTF-8 as \xNN.
func printable(s, keep string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unicode.IsPrint(r) && !strings.ContainsRune(keep, r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// printableJSON escapes, in encoding/json's output, what it leaves raw and
// printable would not: DEL, C1 and other non-printing runes, as \uXXXX
// (the same string to a JSON reader). They can only stand inside strings:
// encoding/json writes no other whitespace than the final newline, and
// no invalid UTF-8.
func printableJSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, r := range string(b) {
		if r == '\n' || unicode.IsPrint(r) {
			out = utf8.AppendRune(out, r)
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}
