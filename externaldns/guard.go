package externaldns

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The provider has no credentials of its own (ExternalDNS sends none): it trusts whoever can
// reach its socket, which by default is a loopback address of ExternalDNS's pod. Three rules
// keep that trust from reaching further, each checked before a request is routed:
//
//   - Host: the Host header names a loopback address, "localhost", or a host the operator
//     allowed (Config.AllowedHosts). A page that rebinds its own DNS name to 127.0.0.1 sends
//     its own name and is answered 421 Misdirected Request.
//   - Browsers: a request with an Origin or Sec-Fetch-Site header comes from a browser, never
//     from ExternalDNS, and is answered 403.
//   - Media type: a POST carries the webhook media type (MediaType: its type and version=1)
//     as its Content-Type, as ExternalDNS sends it, or is answered 415. A page can post
//     across sites without asking first only as text/plain, a form or multipart.

// refusal is a request the guard turned away: its status, the reason as the metric labels it,
// and a message that says what to send instead.
type refusal struct {
	code   int
	reason string
	msg    string
}

// guard returns why r may not reach the webhook, or nil when it may.
func (p *Provider) guard(r *http.Request) *refusal {
	if !p.hostAllowed(r.Host) {
		return &refusal{http.StatusMisdirectedRequest, reasonHost, fmt.Sprintf(
			"externaldns: Host %q is not this provider's: use a loopback address or localhost in --webhook-provider-url, or add the name to -allowed-hosts", shortText(r.Host))}
	}
	if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" {
		return &refusal{http.StatusForbidden, reasonBrowser,
			"externaldns: the webhook answers ExternalDNS, not browsers (the request has an Origin or Sec-Fetch-Site header)"}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !webhookMediaType(r.Header.Get("Content-Type")) {
		return &refusal{http.StatusUnsupportedMediaType, reasonMediaType, fmt.Sprintf(
			"externaldns: Content-Type %q: send %s", shortText(r.Header.Get("Content-Type")), MediaType)}
	}
	return nil
}

// webhookMediaType reports whether a Content-Type is the webhook protocol's, version 1.
func webhookMediaType(ct string) bool {
	typ, params, err := mime.ParseMediaType(ct)
	return err == nil && typ == mediaTypeName && params["version"] == "1"
}

// mediaTypeName is MediaType without its parameters.
const mediaTypeName = "application/external.dns.webhook+json"

// hostAllowed reports whether a request's Host header (a name or address, with or without
// a port) names this provider: a loopback address, localhost, or one of the allowed hosts.
func (p *Provider) hostAllowed(hostport string) bool {
	h := canonicalHost(hostport)
	if h == "" {
		return false
	}
	if h == "localhost" {
		return true
	}
	if a, err := netip.ParseAddr(h); err == nil && a.Unmap().IsLoopback() {
		return true
	}
	_, ok := p.hosts[h]
	return ok
}

// canonicalHost returns the host of a Host header or of an -allowed-hosts entry: without the
// port, the brackets of an IPv6 address or a final dot, in lower case.
func canonicalHost(hostport string) string {
	h := strings.TrimSpace(hostport)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// shortText returns s cut to 100 bytes with control characters escaped, for an error message
// or a log line that quotes what a client sent.
func shortText(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
