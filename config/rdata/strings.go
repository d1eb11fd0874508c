package rdata

import (
	"errors"
	"fmt"
	"strings"
)

// MaxString is the longest character string of a TXT record (RFC 1035 §3.3): one length byte.
const MaxString = 255

// textStrings reads a TXT value into the bytes of its character strings. A value that starts
// with a double quote is one or more quoted strings as a zone file writes them ("a" "b"),
// separated by spaces or tabs, with the escapes \" \\ \DDD (a byte in decimal) and \X (X itself); each
// string holds at most 255 bytes. Any other value is taken byte for byte as written, spaces
// included, and cut into strings of 255 bytes.
func textStrings(value string) ([]string, error) {
	if !strings.HasPrefix(value, `"`) {
		if err := plainProblem(value); err != nil {
			return nil, err
		}
		var out []string
		for len(value) > 0 {
			n := min(len(value), MaxString)
			out = append(out, value[:n])
			value = value[n:]
		}
		return out, nil
	}
	var out []string
	for i := 0; i < len(value); {
		switch value[i] {
		case ' ', '\t':
			i++
			continue
		case '"':
		default:
			return nil, fmt.Errorf("byte %d: %q after a quoted string; separate quoted strings with spaces, or quote the whole value", i+1, value[i])
		}
		s, next, err := quoted(value, i)
		if err != nil {
			return nil, err
		}
		if len(s) > MaxString {
			return nil, fmt.Errorf("quoted string %d is %d bytes long, at most %d: split it into several quoted strings", len(out)+1, len(s), MaxString)
		}
		out = append(out, s)
		i = next
	}
	return out, nil
}

// plainProblem says why an unquoted value cannot be taken as written: control characters have
// no form there.
func plainProblem(value string) error {
	for _, r := range value {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("holds the control character %q; write it as \\DDD in a quoted string", r)
		}
	}
	return nil
}

// quoted reads the quoted string that starts at value[start] (a double quote) and returns its
// bytes and the offset after its closing quote.
func quoted(value string, start int) (string, int, error) {
	var b strings.Builder
	for i := start + 1; i < len(value); i++ {
		c := value[i]
		switch {
		case c == '"':
			return b.String(), i + 1, nil
		case c == '\\':
			if i+1 == len(value) {
				return "", 0, errors.New("ends with a lone backslash; write \\\\ for a backslash")
			}
			if isDigit(value[i+1]) {
				if i+3 >= len(value) || !isDigit(value[i+2]) || !isDigit(value[i+3]) {
					return "", 0, fmt.Errorf("byte %d: an escape \\DDD needs three decimal digits", i+1)
				}
				n := int(value[i+1]-'0')*100 + int(value[i+2]-'0')*10 + int(value[i+3]-'0')
				if n > 255 {
					return "", 0, fmt.Errorf("byte %d: escape \\%s is not a byte (000 to 255)", i+1, value[i+1:i+4])
				}
				b.WriteByte(byte(n))
				i += 3
				continue
			}
			b.WriteByte(value[i+1])
			i++
		case c < 0x20 || c == 0x7f:
			return "", 0, fmt.Errorf("byte %d: the control character %q; write it as \\%03d", i+1, rune(c), c)
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unbalanced quotes: the string opened at byte %d is not closed", start+1)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// escape writes the bytes of a character string in the form miekg/dns keeps in a TXT or CAA
// record and reads back when it packs one: quote and backslash escaped, every byte outside
// printable ASCII as \DDD.
func escape(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 || c > 0x7e {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Quote writes bytes as one quoted string of a zone file: the form textStrings reads back.
func Quote(s string) string { return `"` + escape(s) + `"` }
