package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// RaftSecretFile is the name of the cluster secret in a voter's control directory
// (<data-dir>/control/raft-secret).
const RaftSecretFile = "raft-secret"

// loadRaftSecret returns the cluster secret raft authenticates with when the node has no
// certificates: cc.RaftSecret, else the file cc.RaftSecretFile, else the one in the control
// directory dir. A voter that bootstraps and has none generates one there (mode 0600) and
// says that every other voter needs it. Any other voter without one is refused: it could
// not reach the cluster, and the secret is not sent over the network (the API may be plain
// HTTP, and the secret is worth more than any token: it writes the log without an audit).
func loadRaftSecret(cc ControlConfig, dir string, log *slog.Logger) ([]byte, error) {
	if len(cc.RaftSecret) > 0 {
		return cc.RaftSecret, nil
	}
	path, given := cc.RaftSecretFile, cc.RaftSecretFile != ""
	if !given {
		path = filepath.Join(dir, RaftSecretFile)
	}
	secret, warning, err := tlsconf.ReadSecretFile(path)
	switch {
	case err == nil:
		if warning != "" {
			log.Warn("node: control: " + warning)
		}
		log.Info("node: control: raft authenticates voters with the cluster secret", "file", path)
		return secret, nil
	case given || !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("node: control: raft secret: %w", err)
	case cc.Bootstrap:
		if secret, err = tlsconf.NewSecret(); err != nil {
			return nil, fmt.Errorf("node: control: %w", err)
		}
		if err := tlsconf.WriteSecretFile(path, secret); err != nil {
			return nil, fmt.Errorf("node: control: %w", err)
		}
		log.Warn("node: control: generated the cluster's raft secret: every other voter needs a copy of this file "+
			"(vigil agent -raft-secret-file FILE); keep it as secret as the CA key", "file", path)
		return secret, nil
	}
	why := "it joins a cluster"
	if _, err := os.Stat(dir); err == nil {
		why = "its data directory holds no raft secret"
	}
	return nil, fmt.Errorf("node: control: this voter has no raft credentials (%s): copy the cluster secret "+
		"(<data-dir>/control/%s on the voter that bootstrapped) to this host and give -raft-secret-file FILE, "+
		"or give every voter -tls-cert, -tls-key and -tls-ca", why, RaftSecretFile)
}
