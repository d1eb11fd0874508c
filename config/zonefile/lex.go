package zonefile

import (
	"fmt"
	"strings"
)

// maxEntryLines bounds how many lines parentheses may hold one entry open: a record that
// spans more (the longest real ones, keys and long TXT records, take a few dozen) has lost
// its ')'. It also bounds the text read again when reading resumes after such an entry.
const maxEntryLines = 1000

// entry is one entry of a zone file: a directive, or one record, which parentheses may spread
// over several lines.
type entry struct {
	line int    // its first line, from 1
	text string // its lines as written, joined by "\n"
	// blank says the entry starts with a space or tab: it names no owner, and takes the one
	// of the record before it.
	blank bool
	// fields are its words outside comments and parentheses; a quoted string keeps its
	// quotes, an escape its backslash.
	fields []string
	// read is how many lines reading the entry took, for split's budget.
	read int
}

// lineError is a problem of a zone file's text at a line.
type lineError struct {
	line int
	msg  string
}

// split cuts a zone file's text into entries, and returns with them every problem of
// quoting and parentheses, each at its line. An entry with such a problem is left out, and
// reading goes on after it: after a '(' that is not closed, at the first line inside it that
// starts in the first column (most files indent the lines a record continues on), or else at
// the line after the '('.
func split(text string) ([]entry, []lineError) {
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	var (
		entries []entry
		errs    []lineError
	)
	// Reading resumes inside an entry that lost its ')', so lines may be read more than once;
	// budget bounds the lines read in all to a few times the file's.
	budget := 2*len(lines) + maxEntryLines
	for i := 0; i < len(lines); {
		e, next, err := lexEntry(lines, i)
		if err != nil {
			errs = append(errs, *err)
		} else if len(e.fields) > 0 {
			entries = append(entries, e)
		}
		if budget -= max(next-i, e.read); budget < 0 && next < len(lines) {
			errs = append(errs, lineError{next + 1, "reading stops here: too many '(' before it are not closed"})
			break
		}
		i = next
	}
	return entries, errs
}

// lexEntry reads the entry that starts at lines[start] and returns it, the index of the line
// after it, or the problem that leaves it out and the line reading resumes at.
func lexEntry(lines []string, start int) (entry, int, *lineError) {
	e := entry{line: start + 1, blank: lines[start] != "" && (lines[start][0] == ' ' || lines[start][0] == '\t')}
	var (
		field   strings.Builder
		inField bool
		depth   int
		resume  = -1 // the first line inside parentheses that starts in the first column
	)
	flush := func() {
		if inField {
			e.fields = append(e.fields, field.String())
			field.Reset()
			inField = false
		}
	}
	for i := start; i < len(lines); i++ {
		l := lines[i]
		e.read = i - start + 1
		if i > start && depth > 0 && resume < 0 && l != "" && !strings.ContainsRune(" \t;)", rune(l[0])) {
			resume = i
		}
		if i-start >= maxEntryLines {
			return e, recoverAt(resume, start), &lineError{start + 1, fmt.Sprintf("'(' is not closed within %d lines", maxEntryLines)}
		}
		inQuote := false
		for j := 0; j < len(l); j++ {
			c := l[j]
			switch {
			case c == '\\':
				field.WriteByte(c)
				if j+1 < len(l) {
					j++
					field.WriteByte(l[j])
				}
				inField = true
			case inQuote:
				field.WriteByte(c)
				if c == '"' {
					inQuote = false
				}
			case c == '"':
				flush()
				field.WriteByte(c)
				inField, inQuote = true, true
			case c == ';':
				j = len(l)
			case c == '(':
				flush()
				depth++
			case c == ')':
				flush()
				if depth == 0 {
					return e, i + 1, &lineError{i + 1, "')' without a '(' before it"}
				}
				depth--
			case c == ' ' || c == '\t':
				flush()
			default:
				field.WriteByte(c)
				inField = true
			}
		}
		if inQuote {
			return e, i + 1, &lineError{i + 1, "a quoted string is not closed on its line"}
		}
		flush()
		if depth == 0 {
			e.text = strings.Join(lines[start:i+1], "\n")
			return e, i + 1, nil
		}
	}
	return e, recoverAt(resume, start), &lineError{start + 1, "'(' is not closed"}
}

// recoverAt returns the line at which reading resumes after an entry whose '(' is not
// closed: resume when there is one, else the line after the entry's first.
func recoverAt(resume, start int) int {
	if resume >= 0 {
		return resume
	}
	return start + 1
}
