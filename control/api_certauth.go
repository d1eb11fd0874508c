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

// certAuthorized reports whether the request's client certificate allows it, as an
// alternative to a bearer token: any certificate of the CA may read; one with the control
// role (a voter forwarding a write it authorized) or the operator role may write. Without
// APIConfig.ClientCerts, or without a certificate, it allows nothing and the token decides.
func (a *API) certAuthorized(r *http.Request, write bool) bool {
	if a.cfg.ClientCerts == nil || r.TLS == nil {
		return false
	}
	roles, ok := a.cfg.ClientCerts(r.TLS)
	if !ok {
		return false
	}
	return !write || slices.Contains(roles, tlsconf.RoleControl) || slices.Contains(roles, tlsconf.RoleOperator)
}
