package agent

import (
	"net/http"
	"time"

	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// setupTLS registers the metrics of Config.TLS (its expiry and reloads, the TLS listeners'
// refusals) and gives the Watcher a client that presents the node's certificate, unless it
// has one.
func (n *Node) setupTLS() error {
	if n.cfg.TLS == nil {
		return nil
	}
	m, err := tlsconf.NewMetrics(n.reg, n.cfg.TLS)
	if err != nil {
		return err
	}
	n.tlsMetrics = m
	if n.cfg.WatcherClient == nil {
		n.cfg.WatcherClient = tlsClient(n.cfg.TLS)
	}
	return nil
}

// tlsClient returns the HTTP client of a node with TLS for voters' APIs (following the
// control plane, forwarding writes, joining): it verifies the server's certificate against
// the CA and the name in its URL, requires the control role of it, as voters require roles
// of their clients (a checker's or a location's certificate of the same CA cannot pose as a
// voter and feed a location a forged state), and presents the node's certificate (which
// stands in for a token: any certificate of the CA reads, a voter's forwards writes).
func tlsClient(s *tlsconf.Store) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: s.ClientConfig(tlsconf.Peer{Roles: []string{tlsconf.RoleControl}}), ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second, MaxIdleConnsPerHost: 4,
	}}
}
