package agent

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// keyringFile is where a node saves the gossip keyring that keyring operations from the pool
// (vigil keyring) left it with: in its data directory, read at start in preference to the
// configured keys, so that a restarted node rejoins with the key the pool uses now.
const keyringFile = "gossip.keyring"

// poolKeys returns the gossip keys the node starts with: the configured ones and those of the
// keyring file, unless the data directory holds a keyring saved by keyring operations.
func (n *Node) poolKeys() ([][]byte, error) {
	g := n.cfg.Gossip
	keys := append([][]byte(nil), g.Keys...)
	if g.KeyringFile != "" {
		more, err := readKeyring(g.KeyringFile)
		if err != nil {
			return nil, err
		}
		keys = append(keys, more...)
	}
	saved, err := n.savedKeyring(keys)
	if err != nil || saved == nil {
		return keys, err
	}
	return saved, nil
}

// savedKeyring returns the keyring saved in the data directory, or nil when there is none
// (or the node runs unencrypted, configured is empty).
func (n *Node) savedKeyring(configured [][]byte) ([][]byte, error) {
	if len(configured) == 0 {
		return nil, nil
	}
	path := filepath.Join(n.cfg.DataDir, keyringFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	keys, err := readKeyring(path)
	if err != nil {
		return nil, err
	}
	n.log.Info("node: gossip keyring from the data directory, as keyring operations left it; it takes precedence over the configured keys", "file", path, "keys", len(keys))
	return keys, nil
}

// saveKeyring writes the keyring (primary first) to the data directory, 0600, through a
// temporary file renamed over the old one.
func (n *Node) saveKeyring(keys [][]byte) {
	var b strings.Builder
	b.WriteString("# written by vigil keyring operations; read at start in preference to -gossip-key-file\n")
	for _, k := range keys {
		b.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	}
	path := filepath.Join(n.cfg.DataDir, keyringFile)
	err := os.MkdirAll(n.cfg.DataDir, 0o700)
	if err == nil {
		err = os.WriteFile(path+".tmp", []byte(b.String()), 0o600)
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		n.log.Error("node: saving the gossip keyring failed: a restart would start with the configured keys", "err", err)
	}
}
