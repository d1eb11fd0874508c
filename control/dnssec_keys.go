package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
)

// keysRecheck is how often the key keeper looks again without a change of state (this voter
// may have become the leader meanwhile).
const keysRecheck = 2 * time.Second

// sealer returns the voter's sealer, or nil without a DNSSEC secret.
func (n *Server) sealer() (*dnssec.Sealer, error) {
	if len(n.cfg.DNSSECSecret) == 0 {
		return nil, errors.New("control: this voter has no DNSSEC secret: it cannot generate zone keys")
	}
	return dnssec.NewSealer(n.cfg.DNSSECSecret)
}

// errNoSigningSecret is why a voter without a DNSSEC secret refuses to enable signing.
const errNoSigningSecret = "this voter has no DNSSEC secret, so the zone's keys could not be generated and the zone would stay unsigned: " +
	"start every voter and location with -dnssec-secret-file (the same file; vigil keyring generate makes one), or leave dnssec.enabled false"

// refuseSigning returns a *ValidationError (422) when cmd enables signing on a zone that has
// no keys yet and this voter has no DNSSEC secret to seal them with; nil otherwise. A zone
// that has keys already is signed by the locations whatever this voter holds.
func (n *Server) refuseSigning(cmd *state.Command) error {
	if len(n.cfg.DNSSECSecret) > 0 {
		return nil
	}
	var zones []*config.Zone
	var paths []string
	switch {
	case cmd.Op == state.OpApplyDocument && cmd.Document != nil:
		for i := range cmd.Document.Zones {
			zones = append(zones, &cmd.Document.Zones[i])
			paths = append(paths, fmt.Sprintf("zones[%d].dnssec.enabled", i))
		}
	case cmd.Op == state.OpPutZone && cmd.Zone != nil:
		zones, paths = append(zones, cmd.Zone), append(paths, "dnssec.enabled")
	}
	s := n.fsm.State()
	var errs config.Errors
	for i, z := range zones {
		if !z.Signed() {
			continue
		}
		if _, ok := s.ZoneKeys(z.Name); ok {
			continue
		}
		errs = append(errs, config.FieldError{Path: paths[i], Message: fmt.Sprintf("zone %q: %s", z.Name, errNoSigningSecret)})
	}
	if len(errs) > 0 {
		return &state.ValidationError{Errors: errs}
	}
	return nil
}

// keepZoneKeys generates the first keys of every signed zone that has none, while this voter
// is the leader: keys come from the leader alone, never from the state machine (generation is
// random; the log carries the result). It returns when ctx ends.
func (n *Server) keepZoneKeys(ctx context.Context) {
	defer n.wg.Done()
	var index, scanned uint64
	warned, wasLeader := false, false
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, keysRecheck)
		s := n.fsm.Wait(wctx, index)
		cancel()
		index = s.Index
		leader := n.IsLeader()
		if !leader || (wasLeader && scanned == s.Index) {
			// Nothing new to look at: not the leader, or the state it already scanned.
			wasLeader = leader
			continue
		}
		wasLeader, scanned = true, s.Index
		for z := range s.ZoneHeads() {
			if !z.Signed() {
				continue
			}
			if _, ok := s.ZoneKeys(z.Name); ok {
				continue
			}
			sealer, err := n.sealer()
			if err != nil {
				if !warned {
					n.log.Error("control: signed zones wait for keys", "zone", z.Name, "err", err)
					warned = true
				}
				break
			}
			if err := n.createZoneKeys(z, sealer); err != nil && !errors.Is(err, state.ErrConflict) {
				n.log.Warn("control: generating a signed zone's first keys", "zone", z.Name, "err", err)
				scanned = 0 // look again at the next recheck
			}
		}
	}
}

// createZoneKeys generates and commits a zone's first keys.
func (n *Server) createZoneKeys(z *config.Zone, sealer *dnssec.Sealer) error {
	zk, err := dnssec.InitialKeys(state.CanonicalZone(z.Name), z.DNSSEC.Keys, sealer, time.Now().Unix())
	if err != nil {
		return err
	}
	if _, err := n.Apply(&state.Command{Op: state.OpPutZoneKeys, Create: true, ZoneKeys: zk}); err != nil {
		return err
	}
	n.log.Info("control: generated a signed zone's first keys", "zone", zk.Zone, "scheme", z.DNSSEC.Keys)
	return nil
}

// Rollover starts (or, with Finish, ends) a rollover of a zone's keys at now, timed by its
// TTLs (dnssec.Rollover), and commits the result, recorded in the audit log under audit
// (who and how; Rollover writes its summary) when audit is not nil. Only the leader can:
// elsewhere ErrNotLeader. A finish before the rollover's earliest finish, unless forced, is a
// *dnssec.TooEarlyError (409); any other refusal a *ValidationError (422).
func (n *Server) Rollover(zone string, req state.RolloverRequest, now time.Time, audit *state.AuditInfo) (uint64, error) {
	if !n.IsLeader() {
		return 0, ErrNotLeader
	}
	s := n.fsm.State()
	z, ok := s.ZoneHead(zone)
	if !ok {
		return 0, fmt.Errorf("control: zone %q: %w", zone, state.ErrNotFound)
	}
	zk, ok := s.ZoneKeys(zone)
	if !ok {
		return 0, fmt.Errorf("control: zone %q has no DNSSEC keys: %w", zone, state.ErrNotFound)
	}
	t := s.RolloverTiming(z)
	var next *dnssec.ZoneKeys
	var err error
	if req.Finish {
		next, err = dnssec.FinishRollover(zk, req.Role, now.Unix(), t, req.Force)
	} else {
		var sealer *dnssec.Sealer
		if sealer, err = n.sealer(); err == nil {
			next, err = dnssec.Rollover(zk, req.Role, sealer, now.Unix(), t)
		}
	}
	var early *dnssec.TooEarlyError
	switch {
	case errors.As(err, &early):
		return 0, fmt.Errorf("control: %w; to finish now anyway send \"force\": true (vigil dnssec rollover -finish -force), which the audit log records", err)
	case err != nil:
		// Not a document problem, but reported as one: 422 with the reason in errors.
		return 0, &state.ValidationError{Errors: config.Errors{{Path: "role", Message: err.Error()}}}
	}
	cmd := &state.Command{Op: state.OpPutZoneKeys, ZoneKeys: next}
	if audit != nil {
		info := *audit
		info.Summary = rolloverSummary(zk, next, req, now.Unix(), t)
		cmd.Audit = &info
	}
	return n.Apply(cmd)
}

// rolloverSummary says a rollover from before to after in one line, for the audit log: the
// zone, the phase, the role, the keys and, for a forced finish, how early it was.
func rolloverSummary(before, after *dnssec.ZoneKeys, req state.RolloverRequest, now int64, t dnssec.Timing) string {
	utc := func(u int64) string { return time.Unix(u, 0).UTC().Format(time.RFC3339) }
	if !req.Finish {
		k := after.Keys[len(after.Keys)-1]
		msg := fmt.Sprintf("dnssec rollover start %s of %s: new key %d", req.Role, after.Zone, k.Tag)
		if k.FinishAfter != 0 {
			msg += ", finish from " + utc(k.FinishAfter)
		} else {
			msg += ", signs from " + utc(k.Activate)
		}
		return msg
	}
	msg := fmt.Sprintf("dnssec rollover finish %s of %s", req.Role, after.Zone)
	for _, k := range after.Keys {
		if k.Role == req.Role && k.Retire == now {
			msg += fmt.Sprintf(": key %d retired, removed at %s", k.Tag, utc(k.Remove))
			break
		}
	}
	if _, earliest := dnssec.FinishTime(before, req.Role, t); req.Force && now < earliest {
		msg += fmt.Sprintf(" (forced %s before the earliest finish %s)", time.Duration(earliest-now)*time.Second, utc(earliest))
	} else if req.Force {
		msg += " (force asked, not needed)"
	}
	return msg
}
