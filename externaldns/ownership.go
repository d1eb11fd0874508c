package externaldns

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
)

// Ownership. The provider changes only the record sets it created: each one it creates
// carries its owner name in the record set's managed_by (Config.Owner, "external-dns" by
// default), stored with the record set in the replicated configuration. Before a create,
// update or delete it reads the record set (a linearizable read) and:
//
//   - writes it when there is none (a create that fails if one appears meanwhile), and marks it;
//   - updates or deletes it only when its managed_by is the provider's owner;
//   - refuses the change otherwise: a record set written by `vigil apply` or the API, one
//     created by another owner, or one the provider created before it marked what it
//     created (no managed_by). An operator who wants ExternalDNS to manage such a record set
//     sets its managed_by to the provider's owner;
//   - never writes or deletes the NS record set of a zone's apex, whoever made it.
//
// A refused change is logged (with the record set's name, type and managed_by) and counted
// in vigil_externaldns_changes_refused_total, and the rest of the request goes on: the
// answer is 204 unless a write failed, so that ExternalDNS does not retry what will be
// refused again. The read and the write are two requests: a record set that an operator
// puts by hand in the milliseconds between them is overwritten (the same race as between
// two operators).

// maxRefusalLogs bounds the refusals one request logs one by one; the others are summed up
// in one line.
const maxRefusalLogs = 16

// setRef names one record set of a managed zone.
type setRef struct {
	zone, owner, typ string
}

// refOf returns the record set an endpoint names; zone is "" outside the managed zones.
func (p *Provider) refOf(e *Endpoint) setRef {
	return setRef{zone: p.zoneOf(e.DNSName), owner: strings.TrimSuffix(strings.ToLower(e.DNSName), ".") + ".",
		typ: strings.ToUpper(e.RecordType)}
}

// apexNS reports whether r is the NS record set of its zone's apex.
func (r setRef) apexNS() bool { return r.typ == string(config.TypeNS) && r.owner == r.zone }

// applyRun is one ApplyChanges request: it counts and logs the changes refused.
type applyRun struct {
	p       *Provider
	refused int
}

// refuse counts and logs a change the provider does not make.
func (a *applyRun) refuse(op string, r setRef, reason, managedBy string) {
	a.p.m.changesRefused.WithLabelValues(op, reason).Inc()
	a.refused++
	if a.refused > maxRefusalLogs {
		return
	}
	var why string
	switch reason {
	case reasonApexNS:
		why = "the zone's own NS record set is never changed by the provider"
	default:
		why = fmt.Sprintf("the record set is not this provider's (managed_by %q, want %q): set its managed_by to %q if ExternalDNS should manage it",
			managedBy, a.p.cfg.Owner, a.p.cfg.Owner)
	}
	a.p.log.Warn("externaldns: change refused", "op", op, "name", r.owner, "type", r.typ, "reason", reason, "why", why)
}

// done logs the refusals that were not logged one by one.
func (a *applyRun) done() {
	if a.refused > maxRefusalLogs {
		a.p.log.Warn("externaldns: more changes refused", "logged", maxRefusalLogs, "not_logged", a.refused-maxRefusalLogs)
	}
}

// apply makes the changes of one request, of the record sets this provider owns.
func (p *Provider) apply(ctx context.Context, ch *Changes) error {
	a := &applyRun{p: p}
	defer a.done()
	olds := map[setRef][]*Endpoint{}
	for _, e := range ch.UpdateOld {
		if e != nil {
			olds[p.refOf(e)] = append(olds[p.refOf(e)], e)
		}
	}
	var errs []error
	for _, e := range ch.Create {
		if e != nil {
			errs = append(errs, a.write(ctx, e, opCreate, nil))
		}
	}
	for _, e := range ch.UpdateNew {
		if e != nil {
			errs = append(errs, a.write(ctx, e, opUpdate, olds[p.refOf(e)]))
		}
	}
	for _, e := range ch.Delete {
		if e != nil {
			errs = append(errs, a.remove(ctx, e))
		}
	}
	return errors.Join(errs...)
}

// stored returns the record set r names as the leader has it, and whether there is one.
func (p *Provider) stored(ctx context.Context, r setRef) (config.RecordSet, bool, error) {
	rs, err := p.ctl.Consistent().RecordSet(ctx, r.zone, r.owner, r.typ)
	switch {
	case errors.Is(err, client.ErrNotFound):
		return config.RecordSet{}, false, nil
	case err != nil:
		return config.RecordSet{}, false, fmt.Errorf("externaldns: read %s %s: %w", r.owner, r.typ, err)
	}
	return rs, true, nil
}

// write creates or updates the record set of an endpoint, marked as the provider's, after
// its checks; then deletes the checks its previous form (stored, or olds as ExternalDNS
// saw it) had and this one has not.
func (a *applyRun) write(ctx context.Context, e *Endpoint, op string, olds []*Endpoint) error {
	p := a.p
	r := p.refOf(e)
	if r.zone == "" {
		return fmt.Errorf("externaldns: %s is in no managed zone", e.DNSName)
	}
	if r.apexNS() {
		a.refuse(op, r, reasonApexNS, "")
		return nil
	}
	rs, checks, err := recordSet(e)
	if err != nil {
		return fmt.Errorf("externaldns: %s %s: %w", e.DNSName, e.RecordType, err)
	}
	rs.ManagedBy = p.cfg.Owner
	prev, exists, err := p.stored(ctx, r)
	if err != nil {
		return err
	}
	if exists && prev.ManagedBy != p.cfg.Owner {
		a.refuse(op, r, reasonNotOwned, prev.ManagedBy)
		return nil
	}
	for i := range checks {
		if err := putCheck(ctx, p.ctl, &checks[i]); err != nil {
			return err
		}
	}
	if exists {
		_, err = p.ctl.PutRecordSet(ctx, r.zone, &rs)
	} else {
		_, err = p.ctl.CreateRecordSet(ctx, r.zone, &rs)
		if errors.Is(err, client.ErrConflict) {
			// Made between the read and the create: by this provider (a create retried on
			// another voter) or by someone else, whose record set stays.
			if prev, exists, err = p.stored(ctx, r); err != nil {
				return err
			}
			if !exists || prev.ManagedBy != p.cfg.Owner {
				a.refuse(op, r, reasonNotOwned, prev.ManagedBy)
				return nil
			}
			_, err = p.ctl.PutRecordSet(ctx, r.zone, &rs)
		}
	}
	if err != nil {
		return err
	}
	p.m.changesApplied.WithLabelValues(op).Inc()
	p.log.Info("externaldns: record set written", "op", op, "name", rs.Name, "type", rs.Type, "records", len(rs.Records), "checks", len(checks))
	keep := map[string]bool{}
	for i := range checks {
		keep[checks[i].ID] = true
	}
	var stale []string
	if exists {
		stale = ownChecks(&prev)
	}
	for _, o := range olds {
		stale = append(stale, checkIDs(o)...)
	}
	var errs []error
	for _, id := range stale {
		if !keep[id] {
			keep[id] = true // once
			errs = append(errs, deleteCheck(ctx, p.ctl, id))
		}
	}
	return errors.Join(errs...)
}

// remove deletes the record set of an endpoint when the provider owns it, then its checks.
func (a *applyRun) remove(ctx context.Context, e *Endpoint) error {
	p := a.p
	r := p.refOf(e)
	if r.zone == "" {
		return nil
	}
	if r.apexNS() {
		a.refuse(opDelete, r, reasonApexNS, "")
		return nil
	}
	prev, exists, err := p.stored(ctx, r)
	if err != nil {
		return err
	}
	ids := checkIDs(e)
	if exists {
		if prev.ManagedBy != p.cfg.Owner {
			a.refuse(opDelete, r, reasonNotOwned, prev.ManagedBy)
			return nil
		}
		if err := deleteRecordSet(ctx, p.ctl, r.zone, r.owner, r.typ); err != nil {
			return err
		}
		p.m.changesApplied.WithLabelValues(opDelete).Inc()
		p.log.Info("externaldns: record set deleted", "name", r.owner, "type", r.typ)
		ids = append(ids, ownChecks(&prev)...)
	}
	var errs []error
	done := map[string]bool{}
	for _, id := range ids {
		if !done[id] {
			done[id] = true
			errs = append(errs, deleteCheck(ctx, p.ctl, id))
		}
	}
	return errors.Join(errs...)
}

// ownChecks returns the checks of a record set's records that the provider made.
func ownChecks(rs *config.RecordSet) []string {
	var ids []string
	for _, r := range rs.Records {
		if isOwnCheck(r.HealthCheck) {
			ids = append(ids, r.HealthCheck)
		}
	}
	return ids
}
