// Package safetext keeps free text from forging output in tables and terminals. The characters
// that end a line, move the cursor, start a terminal escape sequence or reorder what a
// terminal shows are refused where text is written (Check) and escaped where it is printed
// (Escape, EscapeStrings), so that an override reason or a server's answer cannot add a row to
// a table, rewrite one, or send the terminal a command.
package safetext

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unsafe reports whether r may not appear in free text: the C0 controls (line feed, carriage
// return and tab included: a table's rows and columns are made of them), DEL, the C1
// controls, the Unicode line and paragraph separators, and the bidirectional formatting
// characters (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069), which reorder
// what a terminal shows ("Trojan Source").
func Unsafe(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL and C1
		return true
	case r == '\u2028', r == '\u2029', r == '\u061c', r == '\u200e', r == '\u200f':
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

// Check returns an error naming the first character of s that free text may not hold, or
// bytes that are not UTF-8; nil when s is safe.
func Check(s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return fmt.Errorf("holds bytes that are not UTF-8 at byte %d: write UTF-8 text", i)
			}
		}
		if Unsafe(r) {
			return fmt.Errorf("holds the control or formatting character %U at byte %d: write it on one line without control characters (line breaks, tabs, escape sequences, bidirectional overrides)", r, i)
		}
	}
	return nil
}

// Escape returns s with every unsafe character, and every byte that is not UTF-8, written
// as a Go escape (\n, \x1b, \u202e); a safe s is returned as is. Backslashes stay as they
// are, so that paths and patterns read as written: text that spells an escape looks like
// one, but can add no line and move no cursor.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Unsafe(r):
			q := strconv.QuoteRune(r) // '\n', '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether s holds an unsafe character or bytes that are not UTF-8.
func needsEscape(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, Unsafe)
}

// EscapeStrings escapes (Escape) in place every string that v points to: the exported string
// fields of structs, the elements of slices and arrays, the keys and values of maps, through
// pointers and interfaces, as decoded from a server before it is printed as a table. v must
// be a pointer; other values are left alone.
func EscapeStrings(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return
	}
	escapeValue(rv.Elem(), 0)
}

// maxDepth bounds the walk of EscapeStrings (a cyclic value would never end).
const maxDepth = 32

func escapeValue(v reflect.Value, depth int) {
	if depth > maxDepth {
		return
	}
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); needsEscape(s) {
				v.SetString(Escape(s))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			escapeValue(v.Elem(), depth+1)
		}
	case reflect.Interface:
		if v.IsNil() || !v.CanSet() {
			return
		}
		// The value inside an interface cannot be set: escape a copy and put it back.
		c := reflect.New(v.Elem().Type()).Elem()
		c.Set(v.Elem())
		escapeValue(c, depth+1)
		v.Set(c)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				escapeValue(v.Field(i), depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes, not text
		}
		for i := range v.Len() {
			escapeValue(v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			escapeValue(k, depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			escapeValue(e, depth+1)
			out.SetMapIndex(k, e)
		}
		v.Set(out)
	}
}
