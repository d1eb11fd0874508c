package rdata

import (
	"fmt"
	"strings"
)

// Limits of DNS names (RFC 1035).
const (
	maxLabelLen = 63
	maxNameWire = 255
)

// Lower lower-cases the ASCII letters of s and leaves every other byte alone, so that it
// never rewrites bytes a name may not hold anyway.
func Lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Fqdn returns name lower-cased with the final dot; the empty name stays empty.
func Fqdn(name string) string {
	if name == "" {
		return ""
	}
	name = Lower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

// NameProblem says why name, absolute with the final dot, is not a valid domain name, or
// returns "". Labels hold letters, digits, '-' (not first or last) and '_' (as in _dmarc);
// the wildcard label "*" is left to the caller, which strips it where a name may hold it.
func NameProblem(name string) string {
	switch name {
	case "":
		return "empty name"
	case ".":
		return "the root name is not allowed here"
	}
	wire := 1
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if l == "" {
			return "empty label (two dots in a row, or a leading dot)"
		}
		if len(l) > maxLabelLen {
			return fmt.Sprintf("label %q is %d bytes long, at most %d", l, len(l), maxLabelLen)
		}
		if l == "*" {
			return "the wildcard label * is allowed only as the first label of a record set's name"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Sprintf("label %q holds %q; use letters, digits, '-' and '_'", l, string(rune(c)))
			}
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Sprintf("label %q starts or ends with '-'", l)
		}
		wire += len(l) + 1
	}
	if wire > maxNameWire {
		return fmt.Sprintf("name is %d bytes long in wire form, at most %d", wire, maxNameWire)
	}
	return ""
}
