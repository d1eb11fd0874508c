package netlab

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Ports every region's processes serve on, at the region's address. Checker k (from 1) and
// voter k add k to theirs.
const (
	portRaft   = 7000
	portAPI    = 7100
	portGossip = 7946
	portHTTP   = 7701
	portDNS    = 53
)

// fleet is every process of a network, and the secrets they share.
type fleet struct {
	spawn *spawner
	procs []*Proc
	// token is the control plane's write token (the data plane reads with it too).
	token string
}

// fleetOptions shape a fleet.
type fleetOptions struct {
	bin, dir         string
	voters, checkers int
	logLevel         string
	extraAgentArgs   []string
}

// newFleet describes the processes of a network on topology t: voters spread over the
// regions in turn, and in every region one demo target, one location and o.checkers
// checkers. It writes the write token, a fresh gossip key and a raft cluster secret into
// o.dir.
func newFleet(t *Topology, o fleetOptions) (*fleet, error) {
	f := &fleet{}
	var err error
	f.token, err = writeSecrets(o.dir)
	if err != nil {
		return nil, err
	}
	tokenFile, keyFile := filepath.Join(o.dir, "token"), filepath.Join(o.dir, "gossip.key")
	raftSecretFile := filepath.Join(o.dir, "raft-secret")
	logs := filepath.Join(o.dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	f.spawn = newSpawner()
	add := func(id, kind string, r *Region, addrs map[string]string, args ...string) *Proc {
		p := &Proc{ID: id, Kind: kind, Region: r, Addrs: addrs, args: args, log: filepath.Join(logs, id+".log"),
			bin: o.bin, spawn: f.spawn}
		f.procs = append(f.procs, p)
		return p
	}
	at := func(r *Region, port int) string { return r.Addr.String() + ":" + strconv.Itoa(port) }
	for _, r := range t.Regions {
		add(r.Name+"-target", KindTarget, r, map[string]string{"http": at(r, targetPort)},
			"target", "-listen", at(r, targetPort), "-name", r.Name)
	}
	var apis []string
	for k := 1; k <= o.voters; k++ {
		r := t.Regions[(k-1)%len(t.Regions)]
		id := "voter-" + strconv.Itoa(k)
		api := "http://" + at(r, portAPI+k)
		args := []string{"agent", "-roles", "control", "-id", id, "-data-dir", filepath.Join(o.dir, id),
			"-raft-addr", at(r, portRaft+k), "-api-addr", at(r, portAPI+k), "-token-file", tokenFile, "-raft-secret-file", raftSecretFile, "-log-level", o.logLevel}
		if k == 1 {
			args = append(args, "-bootstrap")
		} else {
			args = append(args, "-join", strings.Join(apis, ","))
		}
		add(id, KindVoter, r, map[string]string{"api": api, "raft": at(r, portRaft+k)}, args...)
		apis = append(apis, api)
	}
	var seeds []string
	for _, r := range t.Regions {
		seeds = append(seeds, at(r, portGossip))
	}
	dataPlane := func(id, kind string, r *Region, gossip, http int, extra ...string) {
		var join []string
		for _, s := range seeds {
			if s != at(r, gossip) {
				join = append(join, s)
			}
		}
		args := []string{"agent", "-roles", kind, "-id", id, "-region", r.Name, "-data-dir", filepath.Join(o.dir, id),
			"-gossip-bind", at(r, gossip), "-gossip-key-file", keyFile, "-join", strings.Join(join, ","),
			"-control", strings.Join(apis, ","), "-token-file", tokenFile, "-http", at(r, http),
			"-log-level", o.logLevel}
		args = append(append(args, extra...), o.extraAgentArgs...)
		addrs := map[string]string{"gossip": at(r, gossip), "http": at(r, http)}
		if kind == KindLocation {
			addrs["dns"] = at(r, portDNS)
		}
		add(id, kind, r, addrs, args...)
	}
	for _, r := range t.Regions {
		dataPlane(r.Name+"-location", KindLocation, r, portGossip, portHTTP, "-dns", at(r, portDNS))
	}
	for _, r := range t.Regions {
		for k := 1; k <= o.checkers; k++ {
			dataPlane(fmt.Sprintf("%s-checker-%d", r.Name, k), KindChecker, r, portGossip+k, portHTTP+k,
				"-probe-allow", "10.200.0.0/16")
		}
	}
	return f, nil
}

// writeSecrets writes a fresh write token, gossip key and raft cluster secret into dir (files
// token, gossip.key and raft-secret) and returns the token. Every voter authenticates raft
// with the same cluster secret.
func writeSecrets(dir string) (token string, err error) {
	secret := make([]byte, 48+32)
	if _, err := rand.Read(secret); err != nil {
		return "", fmt.Errorf("netlab: secrets: %w", err)
	}
	token = hex.EncodeToString(secret[:16])
	for name, content := range map[string]string{
		"token":       token,
		"gossip.key":  base64.StdEncoding.EncodeToString(secret[16:48]),
		"raft-secret": base64.StdEncoding.EncodeToString(secret[48:]),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("netlab: %w", err)
		}
	}
	return token, nil
}

// find returns the process named id, or nil.
func (f *fleet) find(id string) *Proc {
	for _, p := range f.procs {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// ofKind returns the processes of kind, in order.
func (f *fleet) ofKind(kind string) []*Proc {
	var out []*Proc
	for _, p := range f.procs {
		if p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// ids returns every process's ID.
func (f *fleet) ids() []string {
	var out []string
	for _, p := range f.procs {
		out = append(out, p.ID)
	}
	return out
}
