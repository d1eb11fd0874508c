package gossip

import (
	"bytes"
	"errors"
	"fmt"
)

// Keys are rotated without a restart, pool-wide, in three steps run on every node: InstallKey
// (the new key is accepted), UseKey (it encrypts), RemoveKey (the old key is refused).

var errInsecure = errors.New("gossip: node runs without encryption")

// InstallKey adds key to the keyring: this node accepts messages encrypted with it.
func (n *Node) InstallKey(key []byte) error {
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
func (n *Node) UseKey(key []byte) error {
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
func (n *Node) RemoveKey(key []byte) error {
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
func (n *Node) Keys() (primary []byte, accepted [][]byte) {
	if n.keyring == nil {
		return nil, nil
	}
	return n.keyring.GetPrimaryKey(), n.keyring.GetKeys()
}
