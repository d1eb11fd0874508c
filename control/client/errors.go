package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// ErrNotFound matches (errors.Is) an *Error of a 404: the check, zone, record set or override
// named does not exist.
var ErrNotFound = errors.New("control client: not found")

// ErrConflict matches (errors.Is) an *Error of a 409: a create named something that exists.
var ErrConflict = errors.New("control client: already exists")

// maxMessage bounds the message kept from an answer that is not the API's JSON error.
const maxMessage = 1 << 10

// Error is an answer of the API that is not a success.
type Error struct {
	// Method and URL are the request's (the URL of the voter that answered).
	Method, URL string
	// StatusCode is the answer's HTTP status code.
	StatusCode int
	// Message is the API's error message; for an answer that is not the API's JSON error
	// (a proxy's, say), the start of its body.
	Message string
	// Problems lists every problem of an invalid document or request, with its path.
	Problems config.Errors
}

// newError reads the error answer body of a request.
func newError(method, url string, code int, body []byte) *Error {
	e := &Error{Method: method, URL: url, StatusCode: code}
	var eb state.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != "" {
		e.Message, e.Problems = eb.Error, eb.Errors
		return e
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "..."
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	e.Message = msg
	return e
}

// Error returns "control client: METHOD URL: HTTP code: message", with the problems after it.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "control client: %s %s: HTTP %d: %s", e.Method, e.URL, e.StatusCode, e.Message)
	for _, p := range e.Problems {
		b.WriteString("; ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Is reports whether target is ErrNotFound and the answer a 404, or ErrConflict and a 409.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrConflict:
		return e.StatusCode == http.StatusConflict
	}
	return false
}

// noAnswerError is a request that got no answer from a voter: it could not be reached, or the
// connection broke before the whole answer was read.
type noAnswerError struct {
	method, url string
	err         error
}

func (e *noAnswerError) Error() string {
	return fmt.Sprintf("control client: %s %s: %v", e.method, e.url, e.err)
}

func (e *noAnswerError) Unwrap() error { return e.err }

// Unavailable reports whether err says that no voter could answer: none could be reached, or
// those reached answered 502, 503 or 504 (no leader known, or the leader not reachable). The
// same request may succeed later; a write that failed so may still have been applied.
func Unavailable(err error) bool {
	if ne := (*noAnswerError)(nil); errors.As(err, &ne) {
		return true
	}
	var e *Error
	if errors.As(err, &e) {
		switch e.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}
