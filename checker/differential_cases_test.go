package checker

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// The behaviours of the differential test, grouped as the issue lists them.

const (
	okHead  = "HTTP/1.1 200 OK\r\n"
	chunkTE = "Transfer-Encoding: chunked\r\n\r\n"
)

func withCL(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

func expect(ranges ...config.StatusRange) func(c *config.Check) {
	return func(c *config.Check) { c.ExpectStatus = ranges }
}

// tlsDiff serves h over TLS (HTTP/1.1 only) with a certificate for app.example.test from ca
// (self-signed when ca is nil); trusted says whether both clients get ca as their roots.
func tlsDiff(ca *testCA, trusted bool, h http.HandlerFunc) func(t *testing.T) diffTarget {
	return func(t *testing.T) diffTarget {
		now := time.Now()
		cert := ca.leaf(t, []string{"app.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
		ap, _ := tlsServer(t, cert, h)
		tgt := diffTarget{ap: ap}
		if trusted {
			tgt.roots = ca.pool
		}
		return tgt
	}
}

func httpsTo(name string) func(c *config.Check) {
	return func(c *config.Check) {
		c.Protocol, c.HostHeader = config.ProtocolHTTPS, name
	}
}

// gzipped is body compressed with gzip.
func gzipped(body string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(body))
	zw.Close()
	return b.Bytes()
}

func behaviours(t *testing.T) []behaviour {
	ca := newTestCA(t)
	hint := "HTTP/1.1 103 Early Hints\r\nLink: </" + strings.Repeat("a", 900) + ">; rel=preload\r\n\r\n"
	fiveMB := strings.Repeat("z", 5<<20)
	var bs []behaviour
	add := func(name string, serve func(t *testing.T) diffTarget, edit func(c *config.Check)) {
		bs = append(bs, behaviour{name, serve, edit})
	}

	// Plain answers.
	add("200 with the match", rawDiff(okHead+withCL("needle")), nil)
	add("200 without the match", rawDiff(okHead+withCL("hay")), nil)
	add("503", rawDiff("HTTP/1.1 503 Service Unavailable\r\n"+withCL("needle")), nil)
	add("404 expected", rawDiff("HTTP/1.1 404 Not Found\r\n"+withCL("")), func(c *config.Check) {
		c.ExpectStatus, c.BodyMatch = []config.StatusRange{{Low: 404, High: 404}}, ""
	})
	add("status line without a reason", rawDiff("HTTP/1.1 200\r\n"+withCL("needle")), nil)
	add("not HTTP at all", rawDiff("SSH-2.0-OpenSSH_9.6\r\n"), nil)
	add("closed before a byte", rawDiff(""), nil)

	// Chunked bodies.
	add("chunked with trailers", rawDiff(okHead+"Trailer: X-Sum\r\n"+chunkTE+"6\r\nneedle\r\n0\r\nX-Sum: 1\r\n\r\n"), nil)
	add("chunked with extensions", rawDiff(okHead+chunkTE+"6;name=value;flag\r\nneedle\r\n0;last\r\n\r\n"), nil)
	add("match across chunk boundaries", rawDiff(okHead+chunkTE+chunked("hay nee"+"dle hay", 4, "")), nil)
	add("match ending at byte 5,120", rawDiff(okHead+chunkTE+chunked(strings.Repeat("x", 5114)+"needle", 700, "")), nil)
	add("match crossing byte 5,120", rawDiff(okHead+chunkTE+chunked(strings.Repeat("x", 5115)+"needle", 700, "")), nil)
	add("tiny chunks with long extensions", rawDiff(okHead+chunkTE+chunked(strings.Repeat("x", 5000)+"needle", 1, ";e="+strings.Repeat("v", 11))), nil)
	add("chunk framing past net/http's limit", rawDiff(okHead+chunkTE+chunked(strings.Repeat("x", 5000)+"needle", 1, ";e="+strings.Repeat("v", 40))), nil)
	add("invalid chunk size", rawDiff(okHead+chunkTE+"zz\r\nneedle\r\n0\r\n\r\n"), nil)
	add("chunked body cut short after the match", rawDiff(okHead+chunkTE+"6\r\nneedle\r\n100\r\nabc"), nil)

	// Other framings.
	add("close-delimited body", rawDiff(okHead+"\r\nsome needle then close"), nil)
	add("close-delimited body that never closes", rawHold(okHead+"\r\nneedle and more to come"), nil)
	add("HTTP/1.0 response", rawDiff("HTTP/1.0 200 OK\r\n\r\nneedle"), nil)
	add("obs-fold header", rawDiff(okHead+"X-Folded: first\r\n second\r\n"+withCL("needle")), nil)
	add("LF-only line endings", rawDiff("HTTP/1.1 200 OK\nContent-Length: 6\n\nneedle"), nil)
	add("short Content-Length, match inside", rawDiff(okHead+"Content-Length: 100\r\n\r\nneedle"), nil)
	add("short Content-Length, no match", rawDiff(okHead+"Content-Length: 100\r\n\r\nhay"), nil)
	add("Content-Length and Transfer-Encoding both", rawDiff(okHead+"Content-Length: 3\r\n"+chunkTE+"6\r\nneedle\r\n0\r\n\r\n"), nil)
	add("conflicting Content-Lengths", rawDiff(okHead+"Content-Length: 6\r\nContent-Length: 7\r\n\r\nneedle!"), nil)
	add("Content-Length 0 with a match", rawDiff(okHead+withCL("")), nil)
	add("server keeps the connection open", rawHold(okHead+withCL("needle")), nil)
	add("HEAD with a Content-Length", rawDiff(okHead+"Content-Length: 100\r\n\r\n"), func(c *config.Check) {
		c.Method, c.BodyMatch = http.MethodHead, ""
	})

	// Interim responses.
	add("100 Continue before 200", rawDiff("HTTP/1.1 100 Continue\r\n\r\n"+okHead+withCL("needle")), nil)
	add("103 Early Hints before 200", handled(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Write([]byte("needle"))
	}), nil)
	add("103 Early Hints before 503", handled(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusServiceUnavailable)
	}), nil)
	add("103 before 503, 1xx expected", handled(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusServiceUnavailable)
	}), expect(config.StatusRange{Low: 100, High: 299}))
	add("ten 1xx before 200", rawDiff(strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", 10)+okHead+withCL("needle")), nil)
	add("102 Processing before 204", rawDiff("HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"), func(c *config.Check) { c.BodyMatch = "" })
	add("status 099 before a 200", rawDiff("HTTP/1.1 099 Odd\r\n\r\n"+okHead+withCL("needle")), nil)
	add("101 unasked", rawDiff("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"), nil)
	add("1xx heads over the head limit", rawDiff(strings.Repeat(hint, 80)+okHead+withCL("needle")), nil)

	// No body.
	add("204 No Content", rawDiff("HTTP/1.1 204 No Content\r\n\r\n"), func(c *config.Check) { c.BodyMatch = "" })
	add("304 Not Modified", rawDiff("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"), func(c *config.Check) { c.BodyMatch = "" })
	add("204 with a body match", rawDiff("HTTP/1.1 204 No Content\r\n\r\n"), nil)

	// Large heads.
	cookies := func(n int) func(t *testing.T) diffTarget {
		return handled(func(w http.ResponseWriter, r *http.Request) {
			for i := range n {
				w.Header().Add("Set-Cookie", fmt.Sprintf("c%d=%s", i, strings.Repeat("z", 10)))
			}
			w.Write([]byte("needle"))
		})
	}
	add("huge head within the limit", cookies(1000), nil)
	add("huge head over the limit", cookies(3000), nil)

	// Slow, early and broken servers.
	add("slowloris head", trickle("", okHead+withCL("needle"), 100*time.Millisecond), nil)
	add("slowloris body, match early", trickle(okHead+"Content-Length: 100\r\n\r\n", "needle"+strings.Repeat(".", 94), 50*time.Millisecond), nil)
	add("slowloris body, match late", trickle(okHead+"Content-Length: 100\r\n\r\n", strings.Repeat(".", 94)+"needle", 50*time.Millisecond), nil)
	add("slowloris body without the match", trickle(okHead+"Content-Length: 100\r\n\r\n", strings.Repeat(".", 100), 50*time.Millisecond), nil)
	// The response goes out when the request's first byte arrives, before its head is read.
	// (Before any byte of the request, net/http may take it for an unsolicited response on an
	// idle connection, by timing: no fixed verdict to compare.)
	add("early response", func(t *testing.T) diffTarget {
		return diffTarget{ap: rawServer(t, func(ctx context.Context, c net.Conn) {
			c.Read(make([]byte, 1))
			c.Write([]byte(okHead + withCL("needle")))
			readRequest(c)
			c.Close()
		})}
	}, nil)
	add("reset mid-head", resetAfter("HTTP/1.1 200 OK\r\nContent-"), nil)
	add("reset mid-body", resetAfter(okHead+"Content-Length: 100\r\n\r\nhay"), nil)

	// Content codings.
	add("gzip unasked", handled(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzipped("compressed needle"))
	}), nil)
	add("gzip, match past 5,120 decoded bytes", handled(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzipped(strings.Repeat("x", 6000) + "needle"))
	}), nil)
	add("gzip label on plain bytes", rawDiff(okHead+"Content-Encoding: gzip\r\n"+withCL("needle")), nil)
	add("brotli unasked", rawDiff(okHead+"Content-Encoding: br\r\n"+withCL("\x0b\x02\x80needle")), nil)

	// TLS.
	other := newTestCA(t)
	add("self-signed, verification on", tlsDiff(nil, false, okNeedle), httpsTo("app.example.test"))
	add("self-signed, verification off", tlsDiff(nil, false, okNeedle), func(c *config.Check) {
		httpsTo("app.example.test")(c)
		c.TLSVerify = false
	})
	add("private CA, trusted by the prober", tlsDiff(ca, true, okNeedle), httpsTo("app.example.test"))
	add("private CA in the check's tls_ca", tlsDiff(ca, false, okNeedle), func(c *config.Check) {
		httpsTo("app.example.test")(c)
		c.TLSCA = ca.pem()
	})
	add("private CA, another CA's bundle", tlsDiff(ca, false, okNeedle), func(c *config.Check) {
		httpsTo("app.example.test")(c)
		c.TLSCA = other.pem()
	})
	add("certificate for another name", tlsDiff(ca, true, okNeedle), httpsTo("www.example.test"))
	sniServer := func(t *testing.T) diffTarget {
		now := time.Now()
		a := ca.leaf(t, []string{"a.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
		b := ca.leaf(t, []string{"b.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("needle for " + r.TLS.ServerName))
		}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.TLS = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if h.ServerName == "b.example.test" {
				return &b, nil
			}
			return &a, nil
		}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return diffTarget{ap: netip.MustParseAddrPort(srv.Listener.Addr().String()), roots: ca.pool}
	}
	add("SNI-dependent certificates, second name", sniServer, httpsTo("b.example.test"))
	add("SNI-dependent certificates, unknown name", sniServer, httpsTo("c.example.test"))
	add("TLS 1.0 only", func(t *testing.T) diffTarget {
		now := time.Now()
		cert := ca.leaf(t, []string{"app.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
		srv := httptest.NewUnstartedServer(http.HandlerFunc(okNeedle))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return diffTarget{ap: netip.MustParseAddrPort(srv.Listener.Addr().String()), roots: ca.pool}
	}, httpsTo("app.example.test"))

	// HTTP/2.
	h2 := func(alert bool, h http.HandlerFunc) func(t *testing.T) diffTarget {
		return func(t *testing.T) diffTarget {
			now := time.Now()
			cert := ca.leaf(t, []string{"app.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
			return diffTarget{ap: h2OnlyServer(t, cert, alert, h), roots: ca.pool}
		}
	}
	add("h2-only server", h2(false, okNeedle), httpsTo("app.example.test"))
	add("h2-only server refusing http/1.1 by ALPN", h2(true, okNeedle), httpsTo("app.example.test"))
	add("h2-only server, 103 then 503", h2(false, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusServiceUnavailable)
	}), httpsTo("app.example.test"))
	add("h2-only server, match past 5,120 bytes", h2(false, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 6000) + "needle"))
	}), httpsTo("app.example.test"))
	add("h2-only server, 5 MB body", h2(false, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("needle" + fiveMB))
	}), httpsTo("app.example.test"))
	add("h2 and http/1.1 server", func(t *testing.T) diffTarget {
		now := time.Now()
		cert := ca.leaf(t, []string{"app.example.test"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
		srv := httptest.NewUnstartedServer(http.HandlerFunc(okNeedle))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.EnableHTTP2 = true
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return diffTarget{ap: netip.MustParseAddrPort(srv.Listener.Addr().String()), roots: ca.pool}
	}, httpsTo("app.example.test"))
	add("h2c-only server in plain text", func(t *testing.T) diffTarget {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(okNeedle))
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		srv.Config.Protocols = &p
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.Start()
		t.Cleanup(srv.Close)
		return diffTarget{ap: netip.MustParseAddrPort(srv.Listener.Addr().String())}
	}, nil)

	// Addresses, sizes, redirects.
	add("IPv6 loopback", func(t *testing.T) diffTarget {
		ln, err := net.Listen("tcp6", "[::1]:0")
		if err != nil {
			t.Skipf("no IPv6 loopback here: %v", err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(okNeedle)}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return diffTarget{ap: netip.MustParseAddrPort(ln.Addr().String())}
	}, nil)
	add("5 MB body, match at the start", handled(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("needle" + fiveMB))
	}), nil)
	add("5 MB body without the match", handled(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(fiveMB))
	}), nil)
	add("5 MB chunked body, match at 5,000", handled(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(fiveMB[:5000] + "needle"))
		w.(http.Flusher).Flush()
		w.Write([]byte(fiveMB))
	}), nil)
	add("redirect followed", func(t *testing.T) diffTarget {
		final := httpServer(t, okNeedle)
		return diffTarget{ap: httpServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://"+final.String()+"/final", http.StatusFound)
		})}
	}, func(c *config.Check) { c.FollowRedirects = true })
	add("redirect not followed", handled(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}), func(c *config.Check) { c.BodyMatch = "" })
	add("redirect loop", handled(func(w http.ResponseWriter, r *http.Request) {
		next := "/a"
		if r.URL.Path == "/a" {
			next = "/"
		}
		http.Redirect(w, r, next, http.StatusFound)
	}), func(c *config.Check) { c.FollowRedirects = true })
	return bs
}
