package checker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// classify maps a probe error to its reason code and a message for people. Network-level
// causes win over the phase the error happened in: a timeout is a timeout in any phase.
func classify(err error) (Reason, string) {
	msg := err.Error()
	var pe *phaseError
	phase := ""
	if errors.As(err, &pe) {
		phase = pe.phase
	}
	var ae *AddressError
	var dnsErr *net.DNSError
	var cve *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var invalidCert x509.CertificateInvalidError
	var hostnameErr x509.HostnameError
	var netErr net.Error
	switch {
	case errors.As(err, &ae):
		return ReasonAddressRefused, msg
	case phase == phaseDNS, errors.As(err, &dnsErr):
		return ReasonDNS, msg // a resolver timeout too: the message says so
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout, msg
	case errors.As(err, &cve), errors.As(err, &unknownAuthority), errors.As(err, &invalidCert),
		errors.As(err, &hostnameErr):
		return ReasonTLSCertificate, msg
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonConnectionRefused, msg
	case errors.Is(err, errClosedUnheard):
		return ReasonConnectionClosed, msg
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return ReasonConnectionReset, msg
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETDOWN), errors.Is(err, syscall.EHOSTDOWN):
		return ReasonUnreachable, msg
	case phase == phaseTLS:
		return ReasonTLSHandshake, msg
	case errors.Is(err, errHeadTooLarge), errors.Is(err, errFramingTooLarge), errors.Is(err, errH2Frame):
		return ReasonProtocol, msg
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonConnectionClosed, msg
	case phase == phaseRead, phase == phaseBody:
		return ReasonProtocol, msg
	}
	return ReasonError, msg
}
