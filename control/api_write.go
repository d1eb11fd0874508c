package control

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/safetext"
)

// commit applies cmd on the leader, or forwards the request there, and answers.
func (a *API) commit(w http.ResponseWriter, r *http.Request, body []byte, cmd *state.Command, created bool) {
	if err := a.stamp(r, cmd); err != nil {
		a.refuse(w, err)
		return
	}
	if err := a.cfg.Node.refuseSigning(cmd); err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	idx, err := a.cfg.Node.Apply(cmd)
	if errors.Is(err, ErrNotLeader) {
		a.forward(w, r, body)
		return
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	w.Header().Set(headerIndex, fmt.Sprint(idx))
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeJSON(w, code, state.WriteResult{Index: idx})
}

// bodyOf reads a write's body in one of the API's decoding turns, answering the error itself
// when it cannot. The caller calls release once it has decoded the body.
func (a *API) bodyOf(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	return a.bodyUpTo(w, r, a.cfg.MaxBodyBytes)
}

// bodyUpTo is bodyOf of a body that may decompress to maxDecoded bytes. A compressed body
// over MaxBodyBytes decompressed also waits for the API's one turn of large bodies, and
// release ends both turns.
func (a *API) bodyUpTo(w http.ResponseWriter, r *http.Request, maxDecoded int64) (body []byte, release func(), ok bool) {
	timer := time.NewTimer(a.cfg.DecodeWait)
	defer timer.Stop()
	turn := func(c chan struct{}) bool {
		select {
		case c <- struct{}{}:
			return true
		case <-timer.C:
			w.Header().Set("Retry-After", "1")
			what := fmt.Sprintf("%d writes are being read and decoded, the limit", cap(c))
			if c == a.large {
				what = "a compressed document is being read, decoded and committed, one at a time"
			}
			writeError(w, http.StatusServiceUnavailable, fmt.Errorf("control: %s; none finished within %v: retry", what, a.cfg.DecodeWait))
		case <-r.Context().Done():
		}
		return false
	}
	large := maxDecoded > a.cfg.MaxBodyBytes && r.Header.Get("Content-Encoding") != ""
	if large && !turn(a.large) {
		return nil, nil, false
	}
	if !turn(a.decodes) {
		if large {
			<-a.large
		}
		return nil, nil, false
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			<-a.decodes
			if large {
				<-a.large
			}
		})
	}
	body, err := readBody(r, maxDecoded)
	switch {
	case errors.Is(err, errUnsupportedType), errors.Is(err, errUnsupportedEncoding):
		release()
		writeError(w, http.StatusUnsupportedMediaType, err)
		return nil, nil, false
	case err != nil:
		release()
		writeError(w, statusOf(err), err)
		return nil, nil, false
	}
	return body, release, true
}

// smallBody is the size under which a write gives its decoding turn back as soon as it is
// decoded, so that many small writes share raft entries; a larger one keeps its turn until
// it is committed, which bounds the memory of large writes in flight.
const smallBody = 64 << 10

// decoded ends the decoding turn of a small write.
func (a *API) decoded(body []byte, release func()) {
	if len(body) < smallBody {
		release()
	}
}

// mismatch is the error of a body whose name disagrees with the URL.
func mismatch(path, got, want string) error {
	return config.Errors{{Path: path, Message: fmt.Sprintf("%q does not match the URL's %q", got, want)}}
}

func (a *API) putDocument(w http.ResponseWriter, r *http.Request) {
	body, release, ok := a.bodyUpTo(w, r, a.cfg.MaxDocumentBytes)
	if !ok {
		return
	}
	defer release()
	if len(body) >= smallBody && !a.cfg.Node.IsLeader() {
		// Only the leader's decoding counts: a follower that decoded a large document (a
		// million checks take minutes and gigabytes) would decode it for nothing.
		a.forward(w, r, body)
		return
	}
	doc, err := decodeDocument(body)
	a.decoded(body, release)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	a.commit(w, r, body, &state.Command{Op: state.OpApplyDocument, Document: doc}, false)
}

func (a *API) putCheck(w http.ResponseWriter, r *http.Request) {
	body, release, ok := a.bodyOf(w, r)
	if !ok {
		return
	}
	defer release()
	c, err := decodeCheck(body)
	a.decoded(body, release)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	create := r.Method == http.MethodPost
	if id := r.PathValue("id"); !create {
		if c.ID == "" {
			c.ID = id
		} else if c.ID != id {
			writeError(w, http.StatusBadRequest, mismatch("id", c.ID, id))
			return
		}
	}
	if c.ID == "" {
		writeError(w, http.StatusBadRequest, config.Errors{{Path: "id", Message: "required"}})
		return
	}
	a.commit(w, r, body, &state.Command{Op: state.OpPutCheck, Check: c, Create: create}, create)
}

func (a *API) deleteCheck(w http.ResponseWriter, r *http.Request) {
	a.commit(w, r, nil, &state.Command{Op: state.OpDeleteCheck, ID: r.PathValue("id")}, false)
}

func (a *API) putZone(w http.ResponseWriter, r *http.Request) {
	body, release, ok := a.bodyOf(w, r)
	if !ok {
		return
	}
	defer release()
	z, err := decodeZone(body)
	a.decoded(body, release)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	create := r.Method == http.MethodPost
	if name := r.PathValue("zone"); !create {
		if z.Name == "" {
			z.Name = name
		} else if state.CanonicalZone(z.Name) != state.CanonicalZone(name) {
			writeError(w, http.StatusBadRequest, mismatch("name", z.Name, name))
			return
		}
	}
	if strings.TrimSpace(z.Name) == "" {
		writeError(w, http.StatusBadRequest, config.Errors{{Path: "name", Message: "required"}})
		return
	}
	a.commit(w, r, body, &state.Command{Op: state.OpPutZone, Zone: z, Create: create}, create)
}

func (a *API) deleteZone(w http.ResponseWriter, r *http.Request) {
	a.commit(w, r, nil, &state.Command{Op: state.OpDeleteZone, ZoneName: r.PathValue("zone")}, false)
}

func (a *API) putRecordSet(w http.ResponseWriter, r *http.Request) {
	body, release, ok := a.bodyOf(w, r)
	if !ok {
		return
	}
	defer release()
	zone := r.PathValue("zone")
	rs, err := decodeRecordSet(body, zone)
	a.decoded(body, release)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	create := r.Method == http.MethodPost
	if !create {
		name, typ := r.PathValue("name"), config.RecordType(strings.ToUpper(r.PathValue("type")))
		switch {
		case rs.Name == "":
			rs.Name = name
		case state.CanonicalOwner(zone, rs.Name) != state.CanonicalOwner(zone, name):
			writeError(w, http.StatusBadRequest, mismatch("name", rs.Name, name))
			return
		}
		switch {
		case rs.Type == "":
			rs.Type = typ
		case !strings.EqualFold(string(rs.Type), string(typ)):
			writeError(w, http.StatusBadRequest, mismatch("type", string(rs.Type), string(typ)))
			return
		}
	}
	if rs.Name == "" || rs.Type == "" {
		writeError(w, http.StatusBadRequest, config.Errors{{Message: "a record set needs a name and a type"}})
		return
	}
	a.commit(w, r, body, &state.Command{Op: state.OpPutRecordSet, ZoneName: zone, RecordSet: rs, Create: create}, create)
}

func (a *API) deleteRecordSet(w http.ResponseWriter, r *http.Request) {
	a.commit(w, r, nil, &state.Command{
		Op: state.OpDeleteRecordSet, ZoneName: r.PathValue("zone"),
		Name: r.PathValue("name"), Type: config.RecordType(strings.ToUpper(r.PathValue("type"))),
	}, false)
}

func (a *API) joinVoter(w http.ResponseWriter, r *http.Request) {
	body, release, ok := a.bodyOf(w, r)
	if !ok {
		return
	}
	defer release()
	var jr state.JoinRequest
	if err := decodeStrict(body, &jr); err != nil {
		writeError(w, http.StatusBadRequest, config.Errors{{Message: "join request: " + err.Error()}})
		return
	}
	var es config.Errors
	if jr.ID == "" {
		es = append(es, config.FieldError{Path: "id", Message: "required"})
	}
	if jr.RaftAddress == "" {
		es = append(es, config.FieldError{Path: "raft_address", Message: "required"})
	}
	if len(es) > 0 {
		writeError(w, http.StatusBadRequest, es)
		return
	}
	// A voter's id and addresses are shown in tables (vigil status, cluster views).
	for _, f := range []struct{ path, text string }{{"id", jr.ID}, {"api", jr.API}, {"raft_address", jr.RaftAddress}} {
		if err := safetext.Check(f.text); err != nil {
			es = append(es, config.FieldError{Path: f.path, Message: err.Error()})
		}
	}
	if len(es) > 0 {
		writeError(w, http.StatusUnprocessableEntity, es)
		return
	}
	idx, err := a.cfg.Node.AddVoter(state.Voter{ID: jr.ID, API: jr.API}, jr.RaftAddress)
	a.answerMembership(w, r, body, idx, err)
}

func (a *API) removeVoter(w http.ResponseWriter, r *http.Request) {
	idx, err := a.cfg.Node.RemoveVoter(r.PathValue("id"))
	a.answerMembership(w, r, nil, idx, err)
}

func (a *API) answerMembership(w http.ResponseWriter, r *http.Request, body []byte, idx uint64, err error) {
	switch {
	case errors.Is(err, ErrNotLeader):
		a.forward(w, r, body)
	case err != nil:
		writeError(w, statusOf(err), err)
	default:
		if i := a.auditMembership(r, body, idx); i > 0 {
			idx = i
		}
		w.Header().Set(headerIndex, fmt.Sprint(idx))
		writeJSON(w, http.StatusOK, state.WriteResult{Index: idx})
	}
}
