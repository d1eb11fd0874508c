package control

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
)

// dnssecView returns a zone's view at now; tm is what its rollovers wait for.
func dnssecView(z *config.Zone, zk *dnssec.ZoneKeys, now time.Time, tm dnssec.Timing) state.DNSSECView {
	apex := state.CanonicalZone(z.Name)
	ttl := state.DNSKEYTTL(z)
	v := state.DNSSECView{Zone: apex, Enabled: z.Signed(), DNSKEYTTL: ttl, Denial: z.DNSSEC.DenialMode(), DS: []string{}, Keys: []state.DNSSECKeyView{}}
	if zk == nil {
		return v
	}
	t := now.Unix()
	unix := func(s int64) *time.Time {
		if s == 0 {
			return nil
		}
		u := time.Unix(s, 0).UTC()
		return &u
	}
	for i := range zk.Keys {
		k := &zk.Keys[i]
		kv := state.DNSSECKeyView{Tag: k.Tag, Role: k.Role, State: k.State(t), DNSKEY: oneLine(k.DNSKEY(apex, ttl).String()),
			Publish: time.Unix(k.Publish, 0).UTC(), Activate: time.Unix(k.Activate, 0).UTC(), Retire: unix(k.Retire), Remove: unix(k.Remove)}
		if k.Role != dnssec.RoleZSK {
			kv.DS = oneLine(k.DS(apex, ttl).String())
			if k.Published(t) {
				v.DS = append(v.DS, kv.DS)
			}
		}
		v.Keys = append(v.Keys, kv)
	}
	// The new keys of a KSK or CSK rollover in progress: the unretired keys of its role
	// after the first.
	for _, role := range []dnssec.Role{dnssec.RoleCSK, dnssec.RoleKSK} {
		_, earliest := dnssec.FinishTime(zk, role, tm)
		first := true
		for i := range zk.Keys {
			k := &zk.Keys[i]
			if earliest == 0 || k.Role != role || k.Retire != 0 || k.Remove != 0 {
				continue
			}
			if first {
				first = false
				continue
			}
			v.Keys[i].FinishAfter = unix(earliest)
		}
	}
	return v
}

// oneLine returns a record's presentation form with single spaces between its fields.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (a *API) getDNSSEC(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("zone")
	a.read(w, r, func(s *state.State) (any, error) {
		z, ok := s.ZoneHead(name)
		if !ok {
			return nil, fmt.Errorf("control: zone %q: %w", name, state.ErrNotFound)
		}
		zk, _ := s.ZoneKeys(name)
		return dnssecView(z, zk, time.Now(), s.RolloverTiming(z)), nil
	})
}

// postRollover starts or finishes a rollover of a zone's keys: a write to the zone like any
// other, so a limited token may roll only the zones its scope holds, and the audit log
// records who did which phase of which zone.
func (a *API) postRollover(w http.ResponseWriter, r *http.Request) {
	zone := r.PathValue("zone")
	p := principalOf(r)
	if err := permit(p, a.cfg.Node.State(), &state.Command{Op: state.OpPutZoneKeys, ZoneName: zone}); err != nil {
		a.refuse(w, err)
		return
	}
	body, release, ok := a.bodyOf(w, r)
	if !ok {
		return
	}
	defer release()
	var req state.RolloverRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, config.Errors{{Path: "", Message: "not a rollover request: " + err.Error()}})
		return
	}
	if req.Force && !req.Finish {
		writeError(w, http.StatusBadRequest, config.Errors{{Path: "force", Message: "force applies to a finish only: send \"finish\": true with it"}})
		return
	}
	now := time.Now()
	audit := &state.AuditInfo{Time: now, Token: p.Name, Method: r.Method, Path: r.URL.Path}
	idx, err := a.cfg.Node.Rollover(zone, req, now, audit)
	if errors.Is(err, ErrNotLeader) {
		a.forward(w, r, body)
		return
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	w.Header().Set(headerIndex, fmt.Sprint(idx))
	writeJSON(w, http.StatusOK, state.WriteResult{Index: idx})
}
