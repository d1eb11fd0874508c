package checker

import (
	"net/netip"
	"time"
)

// Reason is a probe result's reason code: a short, fixed word that says why a probe ended as
// it did. Metrics label probes by it, so the set is closed; the detail goes in the message.
type Reason string

// The reason codes of probe results.
const (
	// ReasonOK: the probe succeeded.
	ReasonOK Reason = "ok"
	// ReasonTimeout: the probe did not finish within the check's timeout.
	ReasonTimeout Reason = "timeout"
	// ReasonDNS: the target's host name did not resolve to an address of the wanted family.
	ReasonDNS Reason = "dns"
	// ReasonAddressRefused: the target (or a redirect) resolved to an address that the
	// checker's AddressPolicy forbids, such as loopback or a private range.
	ReasonAddressRefused Reason = "address_refused"
	// ReasonConnectionRefused: the target refused the TCP connection.
	ReasonConnectionRefused Reason = "connection_refused"
	// ReasonConnectionReset: the target reset the connection.
	ReasonConnectionReset Reason = "connection_reset"
	// ReasonConnectionClosed: the target closed the connection before a full response.
	ReasonConnectionClosed Reason = "connection_closed"
	// ReasonUnreachable: the network or host is unreachable from this checker.
	ReasonUnreachable Reason = "network_unreachable"
	// ReasonTLSHandshake: the TLS handshake failed for a reason other than the certificate.
	ReasonTLSHandshake Reason = "tls_handshake"
	// ReasonTLSCertificate: the server's certificate did not verify (expired, self-signed,
	// wrong name, unknown authority).
	ReasonTLSCertificate Reason = "tls_certificate"
	// ReasonProtocol: the response broke its protocol (not valid HTTP, gRPC or DNS), its head
	// was over MaxResponseHead, or its body's framing was too large.
	ReasonProtocol Reason = "protocol"
	// ReasonStatus: the HTTP status was outside the expected ranges, the gRPC health answer
	// was not SERVING (or the call failed), or the DNS rcode was not the expected one; the
	// message says which.
	ReasonStatus Reason = "status"
	// ReasonBodyMismatch: the body match string was not in the first BodyMatchLimit bytes.
	ReasonBodyMismatch Reason = "body_mismatch"
	// ReasonAnswerMismatch: the DNS answer did not hold the expected record.
	ReasonAnswerMismatch Reason = "answer_mismatch"
	// ReasonRedirectLoop: following redirects came back to a URL already visited.
	ReasonRedirectLoop Reason = "redirect_loop"
	// ReasonTooManyRedirects: following redirects went past MaxRedirects hops.
	ReasonTooManyRedirects Reason = "too_many_redirects"
	// ReasonBadRedirect: a redirect had no usable Location.
	ReasonBadRedirect Reason = "bad_redirect"
	// ReasonError: any other failure; the message holds the error.
	ReasonError Reason = "error"
)

// Timings are the phases of one probe. DNS, Connect and TLS are the durations of those
// phases summed over every hop; FirstByte and Total are measured from the start of the probe
// (as curl's time_starttransfer and time_total are). A phase that did not happen is zero.
type Timings struct {
	DNS       time.Duration
	Connect   time.Duration
	TLS       time.Duration
	FirstByte time.Duration
	Total     time.Duration
}

// Result is the outcome of one probe: whether the target is healthy by the check's rules, why,
// and what was measured on the way.
type Result struct {
	// Healthy is true when the probe met every condition of the check.
	Healthy bool
	// Reason is the reason code; Message says the same for a person ("status 503").
	Reason  Reason
	Message string
	// Start is when the probe began.
	Start time.Time
	// Timings are the probe's phases.
	Timings Timings
	// Address is the resolved address the last connection went to (zero if none was made).
	Address netip.AddrPort
	// StatusCode is the last HTTP status received, or 0.
	StatusCode int
	// Protocol is the protocol the probe spoke, as ALPN names it: "http/1.1" or "http/1.0"
	// (the version of the final response), "h2" (HTTP/2 over TLS) or "h2c" (without TLS,
	// gRPC checks only); "udp" or "tcp" for the last DNS query; "tcp" for a TCP check. Empty
	// when the probe ended before it spoke.
	Protocol string
	// Redirects is how many redirects were followed.
	Redirects int
	// CertNotAfter is the expiry of the server's leaf certificate, verified or not, when a
	// TLS handshake got as far as receiving it.
	CertNotAfter time.Time
	// Lag is set by the scheduler: how long after its due time the probe started.
	Lag time.Duration
}

// fail fills r as a failure with reason and message.
func (r *Result) fail(reason Reason, msg string) {
	r.Healthy = false
	r.Reason = reason
	r.Message = msg
}
