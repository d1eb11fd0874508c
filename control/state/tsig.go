package state

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/vigil-dns/vigil/config"
)

// TSIG keys of zone transfers: a location that feeds secondaries signs its transfers and
// NOTIFY with them. The control plane holds them like the zones' private keys: the voter that
// takes the write seals the secret with its DNSSEC seal secret (dnssec.Sealer.SealTSIG), the
// raft log, the snapshots and the data plane's copies hold the sealed form only, a checker's
// certificate never gets it (State.withoutSealed), and no read shows it. A location opens the
// keys with the same seal secret (package node).

// MaxTSIGKeys bounds the TSIG keys the control plane holds.
const MaxTSIGKeys = 1024

// StoredTSIGKey is a TSIG key as the control plane stores it: its secret sealed.
type StoredTSIGKey struct {
	// Name is the key's name, lower case and absolute ("vigil-xfr.").
	Name string `json:"name"`
	// Algorithm is hmac-sha256, hmac-sha384 or hmac-sha512.
	Algorithm string `json:"algorithm"`
	// Sealed is the base64 secret, sealed by dnssec.Sealer.SealTSIG under Name; absent for a
	// reader that may not have it.
	Sealed []byte `json:"sealed,omitempty"`
}

// TSIGKeyList is the TSIG keys a Delta carries when they changed: all of them.
type TSIGKeyList struct {
	Items []*StoredTSIGKey `json:"items"`
}

// TSIGKeys yields the control plane's TSIG keys in the order of their names; the caller must
// not change them.
func (s *State) TSIGKeys() func(yield func(*StoredTSIGKey) bool) {
	return func(yield func(*StoredTSIGKey) bool) {
		for _, name := range slices.Sorted(maps.Keys(s.tsig)) {
			if !yield(s.tsig[name]) {
				return
			}
		}
	}
}

// TSIGKey returns the TSIG key name (any case, with or without the final dot).
func (s *State) TSIGKey(name string) (*StoredTSIGKey, bool) {
	k, ok := s.tsig[config.TSIGKeyName(name)]
	return k, ok
}

// tsigList returns the keys as a list, without their sealed secrets when hide.
func (s *State) tsigList(hide bool) []*StoredTSIGKey {
	out := make([]*StoredTSIGKey, 0, len(s.tsig))
	for k := range s.TSIGKeys() {
		if hide {
			k = &StoredTSIGKey{Name: k.Name, Algorithm: k.Algorithm}
		}
		out = append(out, k)
	}
	return out
}

// setTSIG replaces the keys with m (the edit keeps it).
func (e *Edit) setTSIG(m map[string]*StoredTSIGKey) {
	if len(m) == 0 {
		m = nil
	}
	e.Next.tsig = m
	e.tsig = true
}

// applyTSIG applies a put_tsig_key or delete_tsig_key command.
func applyTSIG(s *State, c *Command, index uint64) (*Edit, error) {
	m := maps.Clone(s.tsig)
	if m == nil {
		m = map[string]*StoredTSIGKey{}
	}
	switch c.Op {
	case OpPutTSIGKey:
		k := c.TSIGKey
		if k == nil || len(k.Sealed) == 0 {
			return nil, errors.New("control: put_tsig_key needs a key with its sealed secret")
		}
		stored := StoredTSIGKey{Name: config.TSIGKeyName(k.Name), Algorithm: config.TSIGAlgorithm(k.Algorithm), Sealed: k.Sealed}
		if _, ok := m[stored.Name]; !ok && len(m) >= MaxTSIGKeys {
			return nil, validationError(config.Errors{{Path: "name", Message: fmt.Sprintf("%d TSIG keys are stored, the most: delete one first", MaxTSIGKeys)}})
		}
		m[stored.Name] = &stored
	case OpDeleteTSIGKey:
		name := config.TSIGKeyName(c.ID)
		if _, ok := m[name]; !ok {
			return nil, fmt.Errorf("control: TSIG key %q: %w", name, ErrNotFound)
		}
		delete(m, name)
	}
	e := s.Edit(index)
	e.setTSIG(m)
	return e, nil
}

// writeTSIG writes the "tsig_keys" member of the state's JSON when there are keys: sealed,
// or without their secrets when s.hideSealed.
func (s *State) writeTSIG(w *bufio.Writer) error {
	if len(s.tsig) == 0 {
		return nil
	}
	w.WriteString(`,"tsig_keys":`)
	return writeValue(w, s.tsigList(s.hideSealed))
}

// readTSIG reads the "tsig_keys" member into the edit.
func (r *stateReader) readTSIG() error {
	var keys []*StoredTSIGKey
	if err := r.dec.Decode(&keys); err != nil {
		return err
	}
	r.e.setTSIG(tsigMap(keys))
	return nil
}

// tsigMap returns keys by name.
func tsigMap(keys []*StoredTSIGKey) map[string]*StoredTSIGKey {
	m := make(map[string]*StoredTSIGKey, len(keys))
	for _, k := range keys {
		if k != nil {
			m[config.TSIGKeyName(k.Name)] = k
		}
	}
	return m
}
