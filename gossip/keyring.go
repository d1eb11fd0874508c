package gossip

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Keys are rotated without a restart, pool-wide, in three steps run on every node: InstallKey
// (the new key is accepted), UseKey (it encrypts), RemoveKey (the old key is refused).
//
// Keyring sends one of these steps (or a listing) to every live member and collects their
// answers: the request and its answers are memberlist user messages over reliable streams,
// encrypted with the pool's keys like all gossip, so only a holder of a key the pool accepts
// can ask, and a key retired by RemoveKey can no longer ask anything. `vigil keyring` joins
// the pool for the time of one operation to send it.

var errInsecure = errors.New("gossip: node runs without encryption")

// InstallKey adds key to the keyring: this node accepts messages encrypted with it.
func (n *Pool) InstallKey(key []byte) error {
	if n.keyring == nil {
		return errInsecure
	}
	if err := checkKey(key); err != nil {
		return fmt.Errorf("gossip: install key: %w", err)
	}
	if err := n.keyring.AddKey(key); err != nil {
		return fmt.Errorf("gossip: install key: %w", err)
	}
	return nil
}

// UseKey makes an installed key the primary: this node encrypts with it.
func (n *Pool) UseKey(key []byte) error {
	if n.keyring == nil {
		return errInsecure
	}
	if err := n.keyring.UseKey(key); err != nil {
		return fmt.Errorf("gossip: use key: %w", err)
	}
	return nil
}

// RemoveKey removes a key that is not the primary: this node refuses messages encrypted
// with it from now on.
func (n *Pool) RemoveKey(key []byte) error {
	if n.keyring == nil {
		return errInsecure
	}
	if bytes.Equal(n.keyring.GetPrimaryKey(), key) {
		return errors.New("gossip: remove key: it is the primary key; use another first")
	}
	if err := n.keyring.RemoveKey(key); err != nil {
		return fmt.Errorf("gossip: remove key: %w", err)
	}
	return nil
}

// Keys returns the primary key and every accepted key (the primary first).
func (n *Pool) Keys() (primary []byte, accepted [][]byte) {
	if n.keyring == nil {
		return nil, nil
	}
	return n.keyring.GetPrimaryKey(), n.keyring.GetKeys()
}

// KeyringOp is an operation on the keyring of every node of the pool.
type KeyringOp string

// The keyring operations.
const (
	// KeyringList asks every node for the fingerprints of its keys.
	KeyringList KeyringOp = "list"
	// KeyringInstall makes every node accept a key (InstallKey).
	KeyringInstall KeyringOp = "install"
	// KeyringUse makes every node encrypt with an installed key (UseKey).
	KeyringUse KeyringOp = "use"
	// KeyringRemove makes every node refuse a key that is no longer its primary (RemoveKey).
	KeyringRemove KeyringOp = "remove"
)

// KeyringAnswer is one node's answer to a keyring operation.
type KeyringAnswer struct {
	// Node is the node's id.
	Node string `json:"node"`
	// Error is set when the node could not apply the operation.
	Error string `json:"error,omitempty"`
	// Primary and Keys are the fingerprints (KeyFingerprint) of the node's primary key and
	// of every key it accepts, after the operation.
	Primary string   `json:"primary"`
	Keys    []string `json:"keys"`
}

// KeyFingerprint names a key without revealing it: the first 8 bytes of its SHA-256, in hex.
func KeyFingerprint(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

// keyringMagic starts a keyring message; gossip's own messages start with a wire version.
const keyringMagic = 'K'

// maxKeyringMessage bounds a keyring message (a request, or an answer listing keys).
const maxKeyringMessage = 8 << 10

// keyringMaxAge is how old a request may be (by its sender's clock) and still be applied:
// a request recorded off the wire cannot be replayed much later.
const keyringMaxAge = 2 * time.Minute

// keyringMsg is a keyring request, or (Answer set) one node's answer to it.
type keyringMsg struct {
	ID     uint64         `json:"id"`
	Op     KeyringOp      `json:"op,omitempty"`
	Key    []byte         `json:"key,omitempty"`
	From   string         `json:"from"`
	Addr   string         `json:"addr"`
	At     int64          `json:"at"` // Unix milliseconds
	Answer *KeyringAnswer `json:"answer,omitempty"`
}

func (m keyringMsg) encode() []byte {
	b, _ := json.Marshal(m) // plain fields: cannot fail
	return append([]byte{keyringMagic}, b...)
}

// keyringState is a node's side of keyring operations: the requests it waits on, and the
// answers it sends (at most keyringReplies at once).
type keyringState struct {
	mu      sync.Mutex
	pending map[uint64]chan KeyringAnswer
	replies chan struct{}
}

const keyringReplies = 4

// keyringMessage handles a keyring message that arrived over memberlist: it applies a
// request and answers its sender, or hands an answer to the operation waiting on it.
func (n *Pool) keyringMessage(b []byte) {
	var m keyringMsg
	if len(b) > maxKeyringMessage || json.Unmarshal(b[1:], &m) != nil {
		n.m.drop(0, reasonMalformed)
		return
	}
	if m.Answer != nil {
		n.kr.mu.Lock()
		ch := n.kr.pending[m.ID]
		n.kr.mu.Unlock()
		if ch != nil {
			select {
			case ch <- *m.Answer:
			default:
			}
		}
		return
	}
	ans := n.applyKeyring(m, n.cfg.Now())
	host, port, err := net.SplitHostPort(m.Addr)
	p, perr := strconv.ParseUint(port, 10, 16)
	ip := net.ParseIP(host)
	if err != nil || perr != nil || ip == nil {
		n.log.Warn("gossip: keyring request with a bad answer address", "from", m.From, "addr", m.Addr)
		return
	}
	select {
	case n.kr.replies <- struct{}{}:
	default:
		n.log.Warn("gossip: keyring answers busy; the requester will ask again", "from", m.From)
		return
	}
	reply := keyringMsg{ID: m.ID, From: n.cfg.ID, Addr: n.addr, At: n.cfg.Now().UnixMilli(), Answer: &ans}
	go func() {
		defer func() { <-n.kr.replies }()
		if err := n.ml.SendReliable(&memberlist.Node{Name: m.From, Addr: ip, Port: uint16(p)}, reply.encode()); err != nil {
			n.log.Warn("gossip: keyring answer not sent", "to", m.From, "err", err)
		}
	}()
}

// applyKeyring applies a request to this node's keyring and returns its answer.
func (n *Pool) applyKeyring(m keyringMsg, now time.Time) KeyringAnswer {
	ans := KeyringAnswer{Node: n.cfg.ID}
	var err error
	switch age := now.Sub(time.UnixMilli(m.At)); {
	case age > keyringMaxAge || age < -keyringMaxAge:
		err = fmt.Errorf("gossip: keyring request %s old (by this node's clock): refused", age.Round(time.Second))
	case m.Op == KeyringList:
	case m.Op == KeyringInstall:
		err = n.InstallKey(m.Key)
	case m.Op == KeyringUse:
		err = n.UseKey(m.Key)
	case m.Op == KeyringRemove:
		err = n.RemoveKey(m.Key)
	default:
		err = fmt.Errorf("gossip: unknown keyring operation %q", m.Op)
	}
	primary, keys := n.Keys()
	if err != nil {
		ans.Error = err.Error()
	} else if m.Op != KeyringList {
		n.log.Info("gossip: keyring changed", "op", m.Op, "key", KeyFingerprint(m.Key), "by", m.From)
		if n.cfg.OnKeyring != nil {
			n.cfg.OnKeyring(orderKeys(primary, keys))
		}
	}
	ans.Primary = KeyFingerprint(primary)
	for _, k := range keys {
		ans.Keys = append(ans.Keys, KeyFingerprint(k))
	}
	return ans
}

// Keyring applies op (with key, except for a listing) on every live member of the pool but
// this node, asking again every retry those that have not answered, until all have or ctx
// ends; it returns the answers by node id, and an error naming the members that did not
// answer. This node applies the operation to its own keyring first (use also installs).
func (n *Pool) Keyring(ctx context.Context, op KeyringOp, key []byte, retry time.Duration) (map[string]KeyringAnswer, error) {
	if n.keyring == nil {
		return nil, errInsecure
	}
	if op != KeyringList {
		if err := checkKey(key); err != nil {
			return nil, fmt.Errorf("gossip: keyring %s: %w", op, err)
		}
	}
	if err := n.applyLocal(op, key); err != nil {
		return nil, err
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	id := binary.BigEndian.Uint64(idb[:])
	var targets []Member
	for _, m := range n.Members() {
		if m.ID != n.cfg.ID && !m.Leaving {
			targets = append(targets, m)
		}
	}
	ch := make(chan KeyringAnswer, 2*len(targets)+1)
	n.kr.mu.Lock()
	n.kr.pending[id] = ch
	n.kr.mu.Unlock()
	defer func() {
		n.kr.mu.Lock()
		delete(n.kr.pending, id)
		n.kr.mu.Unlock()
	}()
	answers := map[string]KeyringAnswer{}
	var mu sync.Mutex
	inflight := map[string]bool{} // a send to a dead member takes memberlist's TCP timeout
	t := time.NewTicker(retry)
	defer t.Stop()
	for {
		req := keyringMsg{ID: id, Op: op, Key: key, From: n.cfg.ID, Addr: n.addr, At: n.cfg.Now().UnixMilli()}.encode()
		for _, m := range targets {
			mu.Lock()
			_, done := answers[m.ID]
			skip := done || inflight[m.ID]
			inflight[m.ID] = true
			mu.Unlock()
			if skip {
				continue
			}
			go func() {
				n.sendKeyring(m, req)
				mu.Lock()
				delete(inflight, m.ID)
				mu.Unlock()
			}()
		}
	wait:
		for n.count(&mu, answers) < len(targets) {
			select {
			case a := <-ch:
				if slices.ContainsFunc(targets, func(m Member) bool { return m.ID == a.Node }) {
					mu.Lock()
					answers[a.Node] = a
					mu.Unlock()
				}
			case <-t.C:
				break wait
			case <-ctx.Done():
				mu.Lock()
				defer mu.Unlock()
				return maps.Clone(answers), n.missing(targets, answers)
			}
		}
		if n.count(&mu, answers) == len(targets) {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(answers), nil
		}
	}
}

// applyLocal applies a keyring operation to this node first, so that it stays in step with
// the pool: it can read the answers of nodes that encrypt with a new key, and it stops using
// a key before the pool refuses it.
func (n *Pool) applyLocal(op KeyringOp, key []byte) error {
	switch op {
	case KeyringInstall:
		return n.InstallKey(key)
	case KeyringUse:
		if err := n.InstallKey(key); err != nil {
			return err
		}
		return n.UseKey(key)
	case KeyringRemove:
		return n.RemoveKey(key)
	case KeyringList:
		return nil
	}
	return fmt.Errorf("gossip: unknown keyring operation %q", op)
}

// sendKeyring sends a request to one member; a failure is retried with the others.
func (n *Pool) sendKeyring(m Member, req []byte) {
	host, port, err := net.SplitHostPort(m.Addr)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil {
		return
	}
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			return
		}
		ip = ips[0]
	}
	if err := n.ml.SendReliable(&memberlist.Node{Name: m.ID, Addr: ip, Port: uint16(p)}, req); err != nil {
		n.log.Debug("gossip: keyring request not sent", "to", m.ID, "err", err)
	}
}

func (n *Pool) count(mu *sync.Mutex, answers map[string]KeyringAnswer) int {
	mu.Lock()
	defer mu.Unlock()
	return len(answers)
}

func (n *Pool) missing(targets []Member, answers map[string]KeyringAnswer) error {
	var ids []string
	for _, m := range targets {
		if _, ok := answers[m.ID]; !ok {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("gossip: keyring: %d of %d members did not answer: %v", len(ids), len(targets), ids)
}

// orderKeys returns keys with the primary first.
func orderKeys(primary []byte, keys [][]byte) [][]byte {
	out := [][]byte{primary}
	for _, k := range keys {
		if !bytes.Equal(k, primary) {
			out = append(out, k)
		}
	}
	return out
}
