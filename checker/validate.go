package checker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-dns/vigil/config"
)

// validateCheck returns why c cannot be probed by a checker, or nil. It repeats the few rules
// of config validation that keep a probe safe, so that a check that reaches the checker by any
// path is refused with a clear error instead of probed wrongly.
func validateCheck(c *config.Check) error {
	if c.ID == "" {
		return errors.New("checker: check without an id")
	}
	switch c.Protocol {
	case config.ProtocolTCP, config.ProtocolHTTP, config.ProtocolHTTPS, config.ProtocolGRPC, config.ProtocolDNS:
	default:
		return fmt.Errorf("checker: check %q: protocol %q is not probed", c.ID, c.Protocol)
	}
	if c.Target.Host == "" || strings.ContainsFunc(c.Target.Host, isCtlOrSpace) {
		return fmt.Errorf("checker: check %q: invalid target host %q", c.ID, c.Target.Host)
	}
	portRequired := c.Protocol == config.ProtocolTCP || c.Protocol == config.ProtocolGRPC
	if c.Target.Port < 0 || c.Target.Port > 65535 || (portRequired && c.Target.Port == 0) {
		return fmt.Errorf("checker: check %q: invalid target port %d", c.ID, c.Target.Port)
	}
	if c.Interval.Std() <= 0 {
		return fmt.Errorf("checker: check %q: interval must be positive", c.ID)
	}
	if c.IPVersion != 0 && c.IPVersion != 4 && c.IPVersion != 6 {
		return fmt.Errorf("checker: check %q: ip_version must be 4 or 6, not %d", c.ID, c.IPVersion)
	}
	var err error
	switch c.Protocol {
	case config.ProtocolHTTP, config.ProtocolHTTPS:
		err = validateHTTP(c)
	case config.ProtocolDNS:
		_, err = dnsQuery(c)
	}
	if err != nil {
		return fmt.Errorf("checker: check %q: %w", c.ID, err)
	}
	return nil
}

// validateHTTP refuses what would let a check inject bytes into its own request: control
// characters or spaces in the path, a method that is not a token, a header name that is not
// a token or a header value with a line break.
func validateHTTP(c *config.Check) error {
	if c.Path != "" && (!strings.HasPrefix(c.Path, "/") || strings.ContainsFunc(c.Path, isCtlOrSpace)) {
		return fmt.Errorf("invalid path %q (must start with / and hold no spaces or control characters)", c.Path)
	}
	if c.Method != "" && !isToken(c.Method) {
		return fmt.Errorf("invalid method %q", c.Method)
	}
	if strings.ContainsFunc(c.Target.Host, isCtlOrSpace) {
		return fmt.Errorf("invalid target host %q", c.Target.Host)
	}
	if strings.ContainsFunc(c.HostHeader, isCtlOrSpace) {
		return fmt.Errorf("invalid host header %q", c.HostHeader)
	}
	for k, v := range c.Headers {
		if !isToken(k) {
			return fmt.Errorf("invalid header name %q", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %s: value holds a line break or NUL", k)
		}
	}
	return nil
}

func isCtlOrSpace(r rune) bool { return r <= ' ' || r == 0x7f }

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0 {
			continue
		}
		return false
	}
	return true
}
