package config

import (
	"fmt"
	"strings"
)

// FieldError is one problem with a document, at a path such as "checks[2].interval".
type FieldError struct {
	// Path locates the field in the document; empty for the document as a whole.
	Path string `json:"path"`
	// Message says what is wrong, and what was found.
	Message string `json:"message"`
}

// Error returns "path: message".
func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Errors is every problem found in a document. Validation returns all of them at once.
type Errors []FieldError

// Error lists the problems, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// add records a problem at path.
func (es *Errors) add(path, format string, args ...any) {
	*es = append(*es, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns es as an error, or nil when there are none.
func (es Errors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}
