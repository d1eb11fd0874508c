package checker

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// The gRPC part of the differential test: servers that each answer a health call in one way,
// probed by the prober and by grpc-go's own health client under the same timeout, several
// times each. The verdicts must agree in health and in kind (ok, status, timeout, connection:
// the server closed or reset the connection), and the prober must give one reason for one
// behaviour every time.

// grpcBehaviour is one way a gRPC server may answer a health call.
type grpcBehaviour struct {
	name    string
	serve   func(t *testing.T) netip.AddrPort
	service string
	hangs   bool // probed with a short timeout, which it outlives
}

// grpcServe serves impl as the health service of a grpc-go server in plain text (h2c).
func grpcServe(impl healthpb.HealthServer) func(t *testing.T) netip.AddrPort {
	return func(t *testing.T) netip.AddrPort {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, impl)
		go srv.Serve(ln)
		t.Cleanup(srv.Stop)
		return netip.MustParseAddrPort(ln.Addr().String())
	}
}

// slowHealth answers a health call when the call's deadline, as the server reads it from
// grpc-timeout, has passed (whole) or when share of it has (a server or proxy that keeps
// a margin for itself), with DEADLINE_EXCEEDED.
type slowHealth struct {
	healthpb.UnimplementedHealthServer
	share float64
}

func (s *slowHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	dl, ok := ctx.Deadline()
	if !ok || s.share >= 1 {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(float64(time.Until(dl)) * s.share)):
	}
	return nil, status.Error(codes.DeadlineExceeded, "the call's deadline passed")
}

func grpcBehaviours() []grpcBehaviour {
	serving := func(t *testing.T) netip.AddrPort {
		srv := health.NewServer()
		srv.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
		return grpcServe(srv)(t)
	}
	closer := func(reset bool) func(t *testing.T) netip.AddrPort {
		return func(t *testing.T) netip.AddrPort {
			return rawServer(t, func(ctx context.Context, c net.Conn) {
				if tc, ok := c.(*net.TCPConn); ok && reset {
					tc.SetLinger(0)
				}
				c.Close()
			})
		}
	}
	return []grpcBehaviour{
		{name: "serving", serve: serving},
		{name: "not serving", serve: serving, service: "down"},
		{name: "unknown service", serve: serving, service: "nothing.here"},
		{name: "hangs past the deadline", serve: grpcServe(&slowHealth{share: 1}), hangs: true},
		{name: "deadline exceeded at 90% of grpc-timeout", serve: grpcServe(&slowHealth{share: 0.9}), hangs: true},
		{name: "closed on accept", serve: closer(false)},
		{name: "reset on accept", serve: closer(true)},
		{name: "closed after the request", serve: func(t *testing.T) netip.AddrPort {
			return rawServer(t, func(ctx context.Context, c net.Conn) {
				c.Read(make([]byte, 4096))
				c.Close()
			})
		}},
	}
}

// grpcKind is the kind of a prober's result.
func grpcKind(r Result) string {
	switch r.Reason {
	case ReasonOK, ReasonStatus, ReasonTimeout:
		return string(r.Reason)
	case ReasonConnectionClosed, ReasonConnectionReset, ReasonConnectionRefused:
		return "connection"
	}
	return string(r.Reason)
}

// probeGRPCGo calls the health service with grpc-go's client and says what kind of answer
// came: ok (SERVING), status (another status, or a gRPC error code from the server),
// timeout (DEADLINE_EXCEEDED) or connection (UNAVAILABLE: no usable connection).
func probeGRPCGo(ap netip.AddrPort, service string, timeout time.Duration) (kind, why string) {
	conn, err := grpc.NewClient(ap.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "error", err.Error()
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	switch {
	case err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING:
		return "ok", resp.Status.String()
	case err == nil:
		return "status", resp.Status.String()
	case status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
		return "timeout", err.Error()
	case status.Code(err) == codes.Unavailable:
		return "connection", err.Error()
	}
	return "status", err.Error()
}

// testDifferentialGRPC runs every gRPC behaviour with the prober and grpc-go, rounds times.
func testDifferentialGRPC(t *testing.T) {
	const rounds = 4
	for _, b := range grpcBehaviours() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ap := b.serve(t)
			c := checkFor("diff-grpc", config.ProtocolGRPC, ap)
			// A bound for the others, not a measure: a busy machine may take a second.
			c.Timeout = config.Duration(5 * time.Second)
			if b.hangs {
				c.Timeout = config.Duration(500 * time.Millisecond)
			}
			c.GRPC = &config.GRPCProbe{Service: b.service}
			if err := validateCheck(&c); err != nil {
				t.Fatal(err)
			}
			reasons := map[Reason]string{}
			for range rounds {
				ref, refWhy := probeGRPCGo(ap, b.service, c.Timeout.Std())
				r := loopbackProber(ProberOptions{}).Probe(context.Background(), &c)
				reasons[r.Reason] = r.Message
				if got := grpcKind(r); got != ref || r.Healthy != (ref == "ok") {
					t.Errorf("prober: %s (%s), kind %s; grpc-go: %s (%s)", r.Reason, r.Message, got, ref, refWhy)
				} else {
					t.Logf("prober: %s (%s); grpc-go: %s (%s)", r.Reason, r.Message, ref, refWhy)
				}
			}
			if len(reasons) > 1 {
				t.Errorf("%d reasons over %d probes of one behaviour: %v", len(reasons), rounds, reasons)
			}
		})
	}
}
