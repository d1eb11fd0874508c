package control

import (
	"crypto/tls"
	"net/http"
	"slices"

	"github.com/vigil-dns/vigil/tlsconf"
)

// ClientCertFunc verifies the certificate a client presented on a TLS connection and returns
// its roles; ok is false when there is none or it does not verify (tlsconf.Store.PeerRoles).
type ClientCertFunc func(cs *tls.ConnectionState) (roles []string, ok bool)

// certPrincipal returns who the request's client certificate says the client is, as an
// alternative to a bearer token: any certificate of the CA may read; one with the control role
// (a voter forwarding a write it authorized) or the operator role may write. The audit log
// names it "cert:" and the certificate's common name. Without APIConfig.ClientCerts, or
// without a certificate that verifies, ok is false and the token decides.
func (a *API) certPrincipal(r *http.Request) (p Principal, ok bool) {
	if a.cfg.ClientCerts == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return p, false
	}
	roles, ok := a.cfg.ClientCerts(r.TLS)
	if !ok {
		return p, false
	}
	write := slices.Contains(roles, tlsconf.RoleControl) || slices.Contains(roles, tlsconf.RoleOperator)
	return Principal{Name: "cert:" + r.TLS.PeerCertificates[0].Subject.CommonName, Scope: Scope{Write: write}}, true
}
