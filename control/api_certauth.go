package control

import (
	"crypto/tls"
	"net/http"
	"slices"
	"unicode"

	"github.com/vigil-dns/vigil/internal/tlsconf"
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
	voter := slices.Contains(roles, tlsconf.RoleControl)
	write := voter || slices.Contains(roles, tlsconf.RoleOperator)
	cn := r.TLS.PeerCertificates[0].Subject.CommonName
	if voter {
		if p, ok := forwardedPrincipal(r, cn); ok {
			return p, true
		}
	}
	// Only voters, locations (which sign) and operators (who may copy the state) read the
	// sealed private halves of zones' keys.
	noKeys := !write && !slices.Contains(roles, tlsconf.RoleLocation)
	return Principal{Name: "cert:" + cn, Scope: Scope{Write: write}, NoSealedKeys: noKeys}, true
}

// headerPrincipal carries, on a request a voter forwards to the leader, the principal that
// authenticated at that voter.
const headerPrincipal = "X-Vigil-Principal"

// forwardedPrincipal returns the principal a voter forwarded the request for, with Via the
// voter's certificate name, when the request carries one (X-Vigil-Forwarded and
// X-Vigil-Principal). It is called only for a certificate of the control role: the voter
// authenticated the client and checked its scope before forwarding (API.commit), and
// vouches for it with its certificate. From anyone else (a token, an operator's or a
// checker's certificate) the headers are ignored, so a client cannot choose the name the
// audit log records. A name that is empty, longer than 200 bytes or holds a control or
// space character is not believed either.
func forwardedPrincipal(r *http.Request, voter string) (Principal, bool) {
	name := r.Header.Get(headerPrincipal)
	if r.Header.Get(headerForwarded) == "" || name == "" || len(name) > 200 || name == "anonymous" {
		return Principal{}, false
	}
	for _, c := range name {
		if c <= ' ' || c == 0x7f || unicode.IsControl(c) || unicode.IsSpace(c) {
			return Principal{}, false
		}
	}
	return Principal{Name: name, Via: voter, Scope: Scope{Write: true}}, true
}
