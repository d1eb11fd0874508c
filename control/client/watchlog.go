package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// watchLogEvery bounds how often the same failure of the same voter is logged again.
const watchLogEvery = time.Minute

// failureCause names why a read of a voter failed, in the words an operator searches for:
// the HTTP status ("401 Unauthorized"), "connection refused", "TLS", "timeout", "DNS lookup"
// or "unreachable".
func failureCause(err error) string {
	var se *Error
	var dns *net.DNSError
	var ne net.Error
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%d %s", se.StatusCode, http.StatusText(se.StatusCode))
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		errors.As(err, &recErr), errors.As(err, &alert), strings.Contains(err.Error(), "tls: "):
		return "TLS"
	case errors.As(err, &dns):
		return "DNS lookup"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.Contains(err.Error(), "undecodable answer"):
		return "undecodable answer"
	}
	return "unreachable"
}

// failureHint says what to check for a cause.
func failureHint(cause string) string {
	switch {
	case strings.HasPrefix(cause, "401"), strings.HasPrefix(cause, "403"):
		return "the voter refuses this node's token: give the node a token of the voters' -token-file or -read-token-file"
	case cause == "connection refused":
		return "no voter listens at that URL: check -control and that the voter runs"
	case cause == "TLS":
		return "the TLS handshake failed: check -tls-ca, -tls-cert and -tls-key, and that -control uses https"
	case cause == "DNS lookup":
		return "the voter's host name does not resolve: check -control"
	case cause == "timeout":
		return "the voter did not answer in time: check the network path to -control"
	}
	return "check -control and the voter's log"
}

// failLog is what the Watcher has logged of one voter's failures.
type failLog struct {
	cause    string
	first    time.Time // when the first failure of this cause was seen
	logged   time.Time // when it was last logged
	since    int       // failures of this cause since it was last logged
	failures int       // failures since the last success
}

// noteFailure logs a failed read of voter: the first, and each change of cause, at WARN at
// once; the same cause again at most once every watchLogEvery, with the count since.
func (w *Watcher) noteFailure(voter string, err error) {
	cause := failureCause(err)
	now := time.Now()
	w.mu.Lock()
	f := w.fails[voter]
	if f == nil {
		f = &failLog{}
		w.fails[voter] = f
	}
	f.failures++
	changed := f.cause != cause
	if changed {
		f.cause, f.first, f.since = cause, now, 0
	}
	f.since++
	due := changed || now.Sub(f.logged) >= watchLogEvery
	var since int
	var first time.Time
	if due {
		since, first = f.since, f.first
		f.logged, f.since = now, 0
	}
	w.status.LastError, w.status.LastErrorVoter, w.status.LastErrorCause, w.status.LastErrorAt = err.Error(), voter, cause, now
	w.mu.Unlock()
	w.log.Debug("control: watch failed", "voter", voter, "err", err)
	if !due {
		return
	}
	attrs := []any{"voter", voter, "cause", cause, "err", err, "hint", failureHint(cause)}
	if !changed {
		attrs = append(attrs, "failures_since_last_log", since, "failing_since", first.Format(time.RFC3339))
	}
	w.log.Warn("control: cannot read the configuration from a voter", attrs...)
}

// noteSuccess logs at INFO that voter answers again after failures.
func (w *Watcher) noteSuccess(voter string) {
	w.mu.Lock()
	f := w.fails[voter]
	delete(w.fails, voter)
	w.mu.Unlock()
	if f != nil {
		w.log.Info("control: a voter answers again", "voter", voter, "after_failures", f.failures,
			"last_cause", f.cause, "failing_for", time.Since(f.first).Round(time.Millisecond).String())
	}
}
