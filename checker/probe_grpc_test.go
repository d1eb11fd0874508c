package checker

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcHealthServer is a real grpc-go server on loopback with the standard health service,
// over TLS with cert when it is given, in plain text (h2c) otherwise.
func grpcHealthServer(t testing.TB, cert *tls.Certificate) (netip.AddrPort, *health.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{*cert}})))
	}
	srv := grpc.NewServer(opts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return netip.MustParseAddrPort(ln.Addr().String()), hs
}

// TestGRPCHealth probes grpc-go's own health service: the whole server and named services,
// serving or not, unknown services, in plain text and over TLS with a private CA.
func TestGRPCHealth(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	now := time.Now()
	cert := ca.leaf(t, []string{"grpc.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	for _, secure := range []bool{false, true} {
		var ap netip.AddrPort
		var hs *health.Server
		if secure {
			ap, hs = grpcHealthServer(t, &cert)
		} else {
			ap, hs = grpcHealthServer(t, nil)
		}
		hs.SetServingStatus("orders.v1.Orders", healthpb.HealthCheckResponse_SERVING)
		hs.SetServingStatus("billing.v1.Billing", healthpb.HealthCheckResponse_NOT_SERVING)
		p := loopbackProber(ProberOptions{})
		tests := []struct {
			service string
			want    Reason
			msg     string
		}{
			{"", ReasonOK, "SERVING"}, // the whole server
			{"orders.v1.Orders", ReasonOK, "SERVING"},
			{"billing.v1.Billing", ReasonStatus, "status NOT_SERVING (expected SERVING)"},
			{"nobody.v1.Nobody", ReasonStatus, "grpc-status 5 NOT_FOUND: unknown service"},
		}
		for _, tt := range tests {
			c := checkFor("grpc", config.ProtocolGRPC, ap)
			c.GRPC = &config.GRPCProbe{Service: tt.service, TLS: secure}
			if secure {
				c.SNI, c.TLSCA = "grpc.example.test", ca.pem()
			}
			r := p.Probe(context.Background(), &c)
			wantProto := "h2c"
			if secure {
				wantProto = "h2"
			}
			if r.Reason != tt.want || !strings.Contains(r.Message, tt.msg) || r.Protocol != wantProto {
				t.Errorf("tls=%v service %q: %s (%s) over %q, want %s (%s) over %s", secure, tt.service, r.Reason, r.Message, r.Protocol, tt.want, tt.msg, wantProto)
			}
			if r.Healthy && (r.Timings.Connect <= 0 || r.Timings.FirstByte <= 0 || secure != (r.Timings.TLS > 0)) {
				t.Errorf("tls=%v service %q: timings %+v", secure, tt.service, r.Timings)
			}
		}
		// The whole server stops serving (a graceful shutdown says so first).
		hs.Shutdown()
		c := checkFor("grpc", config.ProtocolGRPC, ap)
		c.GRPC = &config.GRPCProbe{TLS: secure}
		if secure {
			c.SNI, c.TLSCA = "grpc.example.test", ca.pem()
		}
		if r := p.Probe(context.Background(), &c); r.Reason != ReasonStatus || !strings.Contains(r.Message, "NOT_SERVING") {
			t.Errorf("tls=%v after Shutdown: %s (%s)", secure, r.Reason, r.Message)
		}
		// The wrong transport fails clearly.
		c.GRPC.TLS = !secure
		if r := p.Probe(context.Background(), &c); r.Healthy {
			t.Errorf("tls=%v probed with tls=%v: healthy (%s)", secure, !secure, r.Message)
		}
	}
}

// TestGRPCNotAServer checks what a gRPC probe makes of servers that are not gRPC servers.
func TestGRPCNotAServer(t *testing.T) {
	t.Parallel()
	http1 := httpServer(t, func(w http.ResponseWriter, r *http.Request) {})
	silent := rawServer(t, func(ctx context.Context, c net.Conn) { <-ctx.Done() })
	for _, tt := range []struct {
		name string
		ap   netip.AddrPort
		want Reason
	}{
		{"an HTTP/1.1 server", http1, ReasonProtocol},
		{"a server that says nothing", silent, ReasonTimeout},
	} {
		c := checkFor("grpc", config.ProtocolGRPC, tt.ap)
		c.Timeout = config.Duration(300 * time.Millisecond)
		if r := loopbackProber(ProberOptions{}).Probe(context.Background(), &c); r.Healthy || r.Reason != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, r.Reason, r.Message, tt.want)
		}
	}
}

// TestHealthMessages checks the protobuf of the one message each way, against grpc-go's
// own encoding (the bytes below are what proto.Marshal writes).
func TestHealthMessages(t *testing.T) {
	if got := healthRequest("a.B"); string(got) != "\x00\x00\x00\x00\x05\x0a\x03a.B" {
		t.Errorf("request %q", got)
	}
	if got := healthRequest(""); string(got) != "\x00\x00\x00\x00\x00" {
		t.Errorf("request for the whole server %q", got)
	}
	for _, tt := range []struct {
		body string
		want uint64
		err  string
	}{
		{"\x00\x00\x00\x00\x02\x08\x01", 1, ""},
		{"\x00\x00\x00\x00\x00", 0, ""},                                        // UNKNOWN, the default
		{"\x00\x00\x00\x00\x0c\x12\x03abc\x08\x02\x1d\x01\x02\x03\x04", 2, ""}, // unknown fields skipped
		{"\x01\x00\x00\x00\x02\x08\x01", 0, "compressed"},
		{"\x00\x00\x00\x00\x03\x08\x01", 0, "not one length-prefixed"},
		{"\x00\x00\x00\x00\x02\x08\x80", 0, "malformed"},
		{"\x00\x00\x00\x00\x03\x12\x05a", 0, "malformed"},
	} {
		got, err := healthStatus([]byte(tt.body))
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: %d, %v; want %d, %q", tt.body, got, err, tt.want, tt.err)
		}
	}
}

// TestNewKindsAddressSafety checks that grpc and dns probes obey the address policy as http
// and tcp probes do: literals and names resolving into reserved ranges are refused before a
// connection is made.
func TestNewKindsAddressSafety(t *testing.T) {
	t.Parallel()
	res := &staticResolver{}
	res.set("metadata.test", "169.254.169.254")
	res.set("inside.test", "10.0.0.1")
	p := NewProber(ProberOptions{Resolver: res, Dialer: refuseAll{t}})
	for _, host := range []string{"127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "fd00::1", "metadata.test", "inside.test"} {
		g := checkFor("grpc", config.ProtocolGRPC, netip.MustParseAddrPort("127.0.0.1:50051"))
		g.Target.Host = host
		d := checkFor("dns", config.ProtocolDNS, netip.MustParseAddrPort("127.0.0.1:53"))
		d.Target.Host, d.DNS = host, &config.DNSProbe{Name: "www.example.test"}
		for _, c := range []config.Check{g, d} {
			if r := p.Probe(context.Background(), &c); r.Reason != ReasonAddressRefused {
				t.Errorf("%s to %s: %s (%s), want address_refused", c.Protocol, host, r.Reason, r.Message)
			}
		}
	}
}

// refuseAll is a dialer that fails the test if anything is dialled.
type refuseAll struct{ t *testing.T }

func (d refuseAll) DialContext(_ context.Context, network, address string) (net.Conn, error) {
	d.t.Errorf("dialled %s %s", network, address)
	return nil, errors.New("refused")
}
