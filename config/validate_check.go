package config

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/vigil-dns/vigil/internal/safetext"
)

// httpMethods are the methods a check may probe with.
func httpMethods() []string {
	return []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
}

// validateCheck checks the check at index i of the document: that its id is its own, then
// the check itself.
func (v *validator) validateCheck(i int) {
	c := &v.doc.Checks[i]
	p := fmt.Sprintf("checks[%d]", i)
	if first := v.checks[c.ID]; validCheckID(c.ID) && first != i {
		v.add(join(p, "id"), "duplicate id %q (also checks[%d])", c.ID, first)
	}
	v.checkItem(c, p)
}

// checkItem checks one check at path p: its id, then the fields of its protocol.
func (v *validator) checkItem(c *Check, p string) {
	switch {
	case c.ID == "":
		v.add(join(p, "id"), "required: a name such as web-us-east")
	case !validCheckID(c.ID):
		v.add(join(p, "id"), "invalid id %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter or digit, at most %d bytes", c.ID, maxCheckID)
	}
	switch c.Protocol {
	case ProtocolHTTP, ProtocolHTTPS, ProtocolTCP, ProtocolGRPC, ProtocolDNS:
		v.validateProbe(c, p)
	case ProtocolCalculated:
		v.validateCalculated(c, p)
	case "":
		v.add(join(p, "protocol"), "required: http, https, tcp, grpc, dns or calculated")
	default:
		v.add(join(p, "protocol"), "must be http, https, tcp, grpc, dns or calculated, got %q", c.Protocol)
	}
}

// validCheckID reports whether id matches [a-z0-9][a-z0-9._-]* and is at most maxCheckID bytes.
func validCheckID(id string) bool {
	if id == "" || len(id) > maxCheckID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-') {
			continue
		}
		return false
	}
	return true
}

// defaultPort is the port a check of protocol pr probes when it names none; 0 when it must.
func defaultPort(pr Protocol) int {
	switch pr {
	case ProtocolHTTP:
		return 80
	case ProtocolHTTPS:
		return 443
	case ProtocolDNS:
		return 53
	}
	return 0
}

// effectiveRegions is the regions a probed check runs in: its own, or every region.
func (v *validator) effectiveRegions(c *Check) []string {
	if len(c.Regions) == 0 {
		return v.doc.Regions
	}
	return c.Regions
}

// validateProbe checks a check that probes a target: http, https, tcp, grpc or dns.
func (v *validator) validateProbe(c *Check, p string) {
	v.validateTarget(c, p)
	if c.Protocol == ProtocolHTTP || c.Protocol == ProtocolHTTPS {
		v.validateHTTP(c, p)
	} else {
		v.refuseHTTPFields(c, p)
	}
	v.validateTLS(c, p)
	v.validateGRPC(c, p)
	v.validateDNS(c, p)
	v.validateTiming(c, p)
	v.validatePlacement(c, p)
	if len(c.Children) > 0 {
		v.add(join(p, "children"), "only calculated checks have children")
	}
	if c.MinHealthy != 0 {
		v.add(join(p, "min_healthy"), "only calculated checks have min_healthy")
	}
}

// validateTarget checks a probe's target: host, port and IP version.
func (v *validator) validateTarget(c *Check, p string) {
	switch {
	case c.Target.Host == "":
		v.add(join(p, "target.host"), "required: an IP address or a host name")
	case hostProblem(c.Target.Host) != "":
		v.add(join(p, "target.host"), "invalid host %q: %s", c.Target.Host, hostProblem(c.Target.Host))
	case targetAddrProblem(c.Target.Host) != "":
		v.add(join(p, "target.host"), "%q %s", c.Target.Host, targetAddrProblem(c.Target.Host))
	}
	port := c.Target.Port
	if port == 0 {
		port = defaultPort(c.Protocol)
	}
	switch {
	case port == 0:
		v.add(join(p, "target.port"), "required for %s checks", c.Protocol)
	case port < 1 || port > 65535:
		v.add(join(p, "target.port"), "must be 1..65535, got %d", port)
	}
	if c.IPVersion != 4 && c.IPVersion != 6 {
		v.add(join(p, "ip_version"), "must be 4 or 6, got %d", c.IPVersion)
	}
}

// validateTiming checks a probe's interval, timeout and thresholds of consecutive results.
func (v *validator) validateTiming(c *Check, p string) {
	iv, to := c.Interval.Std(), c.Timeout.Std()
	intervalOK := iv >= minInterval && iv <= maxInterval
	if !intervalOK {
		v.add(join(p, "interval"), "must be %s..%s, got %s", minInterval, maxInterval, iv)
	}
	switch {
	case to <= 0:
		v.add(join(p, "timeout"), "must be positive, got %s", to)
	case intervalOK && to >= iv:
		v.add(join(p, "timeout"), "must be positive and shorter than interval (%s), got %s", iv, to)
	}
	if c.FailureThreshold < 1 || c.FailureThreshold > 10 {
		v.add(join(p, "failure_threshold"), "must be 1..10, got %d", c.FailureThreshold)
	}
	if c.SuccessThreshold < 1 || c.SuccessThreshold > 10 {
		v.add(join(p, "success_threshold"), "must be 1..10, got %d", c.SuccessThreshold)
	}
}

// validatePlacement checks where a probe runs and how its reports are counted: regions,
// checkers_per_region, healthy_threshold and min_reporters.
func (v *validator) validatePlacement(c *Check, p string) {
	regions := v.effectiveRegions(c)
	regionsOK := len(regions) > 0
	seen := map[string]int{}
	for j, r := range c.Regions {
		rp := join(p, fmt.Sprintf("regions[%d]", j))
		if !v.regions[r] {
			if len(v.doc.Regions) == 0 {
				v.add(rp, "unknown region %q (the document names no regions)", r)
			} else {
				v.add(rp, "unknown region %q (the document's regions are %s)", r, strings.Join(v.doc.Regions, ", "))
			}
			regionsOK = false
		} else if k, dup := seen[r]; dup {
			v.add(rp, "duplicate region %q (also regions[%d])", r, k)
			regionsOK = false
		}
		seen[r] = j
	}
	if len(v.doc.Regions) > 0 && len(regions) < MinCheckRegions && !c.AllowFewerRegions {
		v.add(join(p, "regions"), "need at least %d regions, got %d (set allow_fewer_regions: true to accept fewer)", MinCheckRegions, len(regions))
	}
	if c.CheckersPerRegion < 1 || c.CheckersPerRegion > maxCheckersPerRegion {
		v.add(join(p, "checkers_per_region"), "must be 1..%d, got %d", maxCheckersPerRegion, c.CheckersPerRegion)
		regionsOK = false
	}
	if t := c.HealthyThreshold; math.IsNaN(t) || t < 0 || t >= 1 {
		v.add(join(p, "healthy_threshold"), "must be at least 0 and below 1 (healthy when more than this fraction of fresh reports is healthy), got %g", t)
	}
	if most := len(regions) * c.CheckersPerRegion; c.MinReporters < 1 || regionsOK && c.MinReporters > most {
		if regionsOK {
			v.add(join(p, "min_reporters"), "must be 1..%d (regions × checkers_per_region), got %d", most, c.MinReporters)
		} else {
			v.add(join(p, "min_reporters"), "must be at least 1, got %d", c.MinReporters)
		}
	}
}

// validateHTTP checks the request and response fields of an http or https check.
func (v *validator) validateHTTP(c *Check, p string) {
	switch {
	case c.Path == "":
		v.add(join(p, "path"), "required: a request path such as /healthz")
	case c.Path[0] != '/':
		v.add(join(p, "path"), "must start with '/', got %q", c.Path)
	case len(c.Path) > maxPathLen:
		v.add(join(p, "path"), "must be at most %d bytes, got %d", maxPathLen, len(c.Path))
	case strings.ContainsFunc(c.Path, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		v.add(join(p, "path"), "must not hold spaces or control characters (escape them as %%20), got %q", c.Path)
	default:
		if _, err := url.ParseRequestURI(c.Path); err != nil {
			v.add(join(p, "path"), "invalid request path %q", c.Path)
		}
	}
	if m := strings.ToUpper(c.Method); !slices.Contains(httpMethods(), m) {
		v.add(join(p, "method"), "must be one of %s, got %q", strings.Join(httpMethods(), ", "), c.Method)
	} else if c.KeepAlive && !KeepAliveMethod(m) {
		v.add(join(p, "keep_alive"), "a %s request is never sent on a kept connection; keep_alive is for GET, HEAD and OPTIONS", m)
	}
	if c.KeepAlive && c.HTTP2 {
		v.add(join(p, "keep_alive"), "an http2 probe opens a fresh connection each time; remove keep_alive")
	}
	if c.HostHeader != "" {
		if prob := hostPortProblem(c.HostHeader); prob != "" {
			v.add(join(p, "host_header"), "invalid host %q: %s", c.HostHeader, prob)
		}
	}
	names := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		hp := join(p, "headers."+k)
		switch {
		case !validToken(k):
			v.add(hp, "invalid header name %q", k)
		case strings.EqualFold(k, "Host"):
			v.add(hp, "set host_header instead of a Host header")
		case framingHeader(k) != "":
			v.add(hp, "%s is set by the checker (message framing and connection handling), not by a check", framingHeader(k))
		case strings.ContainsFunc(c.Headers[k], func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
			v.add(hp, "header value holds a control character")
		}
	}
	if len(c.ExpectStatus) == 0 {
		v.add(join(p, "expect_status"), "at least one status range is required, e.g. [200-399]")
	}
	for j, r := range c.ExpectStatus {
		rp := join(p, fmt.Sprintf("expect_status[%d]", j))
		switch {
		case r.Low < 100 || r.High > 599:
			v.add(rp, "must lie within 100-599, got %s", r)
		case r.Low > r.High:
			v.add(rp, "low bound above high bound, got %s", r)
		}
	}
	if n := utf8.RuneCountInString(c.BodyMatch); n > MaxBodyMatch {
		v.add(join(p, "body_match"), "must be at most %d characters, got %d", MaxBodyMatch, n)
	} else if err := safetext.Check(c.BodyMatch); err != nil {
		v.add(join(p, "body_match"), "%v", err)
	}
}

// KeepAliveMethod reports whether a request of method (upper case) may be sent on a kept
// connection: an idempotent one without a body, GET, HEAD or OPTIONS.
func KeepAliveMethod(method string) bool {
	return method == "GET" || method == "HEAD" || method == "OPTIONS"
}

// refuseHTTPFields reports each HTTP field that a check of another protocol sets to other
// than its default.
func (v *validator) refuseHTTPFields(c *Check, p string) {
	def := DefaultCheck()
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"path", c.Path != "" && c.Path != def.Path},
		{"method", c.Method != "" && c.Method != def.Method},
		{"host_header", c.HostHeader != ""},
		{"headers", len(c.Headers) > 0},
		{"expect_status", len(c.ExpectStatus) > 0 && !slices.Equal(c.ExpectStatus, def.ExpectStatus)},
		{"body_match", c.BodyMatch != ""},
		{"follow_redirects", c.FollowRedirects},
		{"keep_alive", c.KeepAlive},
		{"http2", c.HTTP2},
	} {
		if f.set {
			v.add(join(p, f.name), "only http and https checks use %s", f.name)
		}
	}
}

// validateCalculated checks a calculated check: its children and min_healthy, and that it
// sets no probe field.
func (v *validator) validateCalculated(c *Check, p string) {
	switch n := len(c.Children); {
	case n == 0:
		v.add(join(p, "children"), "a calculated check needs at least one child")
	case n > MaxChildren:
		v.add(join(p, "children"), "at most %d children, got %d", MaxChildren, n)
	}
	seen := map[string]int{}
	for j, id := range c.Children {
		cp := join(p, fmt.Sprintf("children[%d]", j))
		if first, dup := seen[id]; dup {
			v.add(cp, "duplicate child %q (also children[%d])", id, first)
			continue
		}
		seen[id] = j
		if id == c.ID {
			v.add(cp, "a check cannot be its own child")
		} else if !v.hasCheck(id) {
			v.add(cp, "no check has id %q", id)
		}
	}
	mh := c.MinHealthy
	if mh == 0 {
		mh = len(c.Children)
	}
	if len(c.Children) > 0 && (mh < 1 || mh > len(c.Children)) {
		v.add(join(p, "min_healthy"), "must be 1..%d (the number of children), got %d", len(c.Children), c.MinHealthy)
	}
	def := DefaultCheck()
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"target", c.Target != Target{}},
		{"ip_version", c.IPVersion != 0 && c.IPVersion != def.IPVersion},
		{"path", c.Path != "" && c.Path != def.Path},
		{"method", c.Method != "" && c.Method != def.Method},
		{"host_header", c.HostHeader != ""},
		{"sni", c.SNI != ""},
		{"tls_ca", c.TLSCA != ""},
		{"headers", len(c.Headers) > 0},
		{"expect_status", len(c.ExpectStatus) > 0 && !slices.Equal(c.ExpectStatus, def.ExpectStatus)},
		{"body_match", c.BodyMatch != ""},
		{"follow_redirects", c.FollowRedirects},
		{"keep_alive", c.KeepAlive},
		{"http2", c.HTTP2},
		{"grpc", c.GRPC != nil},
		{"dns", c.DNS != nil},
		{"interval", c.Interval != 0 && c.Interval != def.Interval},
		{"timeout", c.Timeout != 0 && c.Timeout != def.Timeout},
		{"failure_threshold", c.FailureThreshold != 0 && c.FailureThreshold != def.FailureThreshold},
		{"success_threshold", c.SuccessThreshold != 0 && c.SuccessThreshold != def.SuccessThreshold},
		{"regions", len(c.Regions) > 0},
		{"allow_fewer_regions", c.AllowFewerRegions},
		{"checkers_per_region", c.CheckersPerRegion != 0 && c.CheckersPerRegion != def.CheckersPerRegion},
		{"healthy_threshold", c.HealthyThreshold != 0 && c.HealthyThreshold != def.HealthyThreshold},
		{"min_reporters", c.MinReporters != 0 && c.MinReporters != def.MinReporters},
	} {
		if f.set {
			v.add(join(p, f.name), "calculated checks do not probe: remove %s", f.name)
		}
	}
}

// isIP reports whether s is an IP address literal.
func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// framingHeader reports whether name is a header that frames the request or manages the
// connection (RFC 9110 section 7.6.1, RFC 9112): the checker sets these itself, and a check
// that set them could smuggle a second request or switch protocols.
// It returns the header's usual spelling, or "".
func framingHeader(name string) string {
	for _, h := range []string{"Content-Length", "Transfer-Encoding", "Upgrade", "Connection", "TE",
		"Trailer", "Keep-Alive", "Proxy-Connection", "HTTP2-Settings", "Expect"} {
		if strings.EqualFold(name, h) {
			return h
		}
	}
	return ""
}

// validToken reports whether s is an HTTP token (RFC 9110), as header names must be.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
