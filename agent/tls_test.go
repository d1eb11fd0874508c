package agent

import (
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// TestTLSClientRequiresControlRole: the client a node uses for voters' APIs (following,
// forwarding, joining) refuses a server whose certificate of the CA lacks the control role,
// and talks to one that has it.
func TestTLSClientRequiresControlRole(t *testing.T) {
	dir := t.TempDir()
	req := func(name string, roles ...string) tlsconf.Request {
		return tlsconf.Request{Name: name, Roles: roles, Hosts: []string{"127.0.0.1"}}
	}
	if _, err := tlsconf.Init(dir, []tlsconf.Request{req("voter", tlsconf.RoleControl), req("checker", tlsconf.RoleChecker),
		req("loc", tlsconf.RoleLocation), req("all", tlsconf.RoleChecker, tlsconf.RoleLocation)},
		tlsconf.InitOptions{Now: time.Now(), CAValid: 24 * time.Hour, CertValid: time.Hour}); err != nil {
		t.Fatal(err)
	}
	store := func(name string) *tlsconf.Store {
		s, err := tlsconf.Load(tlsconf.Files{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem"), CA: filepath.Join(dir, "ca.pem")}, tlsconf.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	serve := func(name string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
			TLSConfig: store(name).ServerConfig(tlsconf.Peer{}), ReadHeaderTimeout: time.Second,
			ErrorLog: log.New(io.Discard, "", 0)}
		go func() { _ = srv.ServeTLS(ln, "", "") }()
		t.Cleanup(func() { _ = srv.Close() })
		return "https://" + ln.Addr().String()
	}
	c := tlsClient(store("loc"))
	c.Timeout = 5 * time.Second
	for _, server := range []string{"checker", "all", "voter"} {
		resp, err := c.Get(serve(server) + "/v1/state")
		if resp != nil {
			resp.Body.Close()
		}
		switch {
		case server == "voter" && err != nil:
			t.Errorf("a voter's certificate was refused: %v", err)
		case server != "voter" && (err == nil || !strings.Contains(err.Error(), "roles [control]")):
			t.Errorf("a %s certificate served as a voter: %v", server, err)
		}
	}
}
