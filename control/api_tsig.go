package control

import (
	"net/http"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

func (a *API) listTSIGKeys(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *state.State) (any, error) {
		out := []state.TSIGKeyView{}
		for k := range s.TSIGKeys() {
			out = append(out, state.TSIGKeyView{Name: k.Name, Algorithm: k.Algorithm, Secret: secretSet})
		}
		return out, nil
	})
}

// putTSIGKey checks a key as a location's key file is checked (config.TSIGKeyProblem),
// seals its secret with this voter's DNSSEC seal secret, and commits the sealed form. A voter
// without the seal secret refuses (422): the key would reach no location.
func (a *API) putTSIGKey(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, release, ok := a.bodyOf(w, r)
	if !ok {
		return
	}
	defer release()
	var req state.TSIGKeyRequest
	if err := decodeStrict(body, &req); err != nil {
		// The decoder's message quotes no value of the body.
		writeError(w, http.StatusBadRequest, config.Errors{{Message: "not a TSIG key (want {\"algorithm\": \"hmac-sha256\", \"secret\": \"base64\"}): " + err.Error()}})
		return
	}
	alg := config.TSIGAlgorithm(req.Algorithm)
	if why := config.TSIGKeyProblem(name, alg, req.Secret); why != "" {
		writeError(w, http.StatusUnprocessableEntity, &state.ValidationError{Errors: config.Errors{{Path: "", Message: why}}})
		return
	}
	sealer, err := a.cfg.Node.sealer()
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, &state.ValidationError{Errors: config.Errors{{Path: "secret", Message: errNoTSIGSecret}}})
		return
	}
	canon := config.TSIGKeyName(name)
	sealed, err := sealer.SealTSIG(canon, []byte(req.Secret))
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	a.commit(w, r, body, &state.Command{Op: state.OpPutTSIGKey, TSIGKey: &state.StoredTSIGKey{Name: canon, Algorithm: alg, Sealed: sealed}}, false)
}

// errNoTSIGSecret is why a voter without a DNSSEC secret refuses a TSIG key.
const errNoTSIGSecret = "this voter has no DNSSEC secret to seal the key's secret with, so no location could open it: " +
	"start every voter and the locations that feed secondaries with -dnssec-secret-file (the same file; vigil keyring generate makes one), " +
	"or give those locations the key in -tsig-keys-file instead"

func (a *API) deleteTSIGKey(w http.ResponseWriter, r *http.Request) {
	a.commit(w, r, nil, &state.Command{Op: state.OpDeleteTSIGKey, ID: r.PathValue("name")}, false)
}

// secretSet is what a read shows of a write-only secret.
const secretSet = "(set)"
