package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/gossip"
)

// runKeyring runs `vigil keyring`: the gossip keyring of every node of a running pool.
func runKeyring(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("keyring", stderr)
	join := fs.String("join", "127.0.0.1:7946", "comma-separated gossip addresses (host:port) of members of the pool")
	keyFile := fs.String("gossip-key-file", "", "file of base64 keys, one per line, that the pool accepts (the nodes' -gossip-key-file): this command joins the pool with them")
	bind := fs.String("bind", "127.0.0.1:0", "address of this command's temporary gossip member (UDP and TCP); the nodes must reach it")
	advertise := fs.String("advertise", "", "address the nodes reach this command's member at (default the bind address)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for every member's answer")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() == 1 && fs.Arg(0) == "generate" {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		fmt.Fprintln(stdout, base64.StdEncoding.EncodeToString(k))
		return 0
	}
	op, key, err := keyringArgs(fs.Args())
	if err == nil && *keyFile == "" {
		err = errors.New("-gossip-key-file is required: the command joins the pool with a key it accepts")
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil keyring: %v\n", err)
		fs.Usage()
		return 2
	}
	keys, err := readKeyFile(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "vigil keyring: %v\n", err)
		return 2
	}
	// The member joins with a key the pool accepts: never the key being installed (the pool
	// does not have it yet) or removed (it is about to refuse it).
	keys = slices.DeleteFunc(keys, func(k []byte) bool { return op != gossip.KeyringList && bytes.Equal(k, key) })
	if len(keys) == 0 {
		fmt.Fprintf(stderr, "vigil keyring: -gossip-key-file %s holds no key besides KEY: give it the key the pool uses now\n", *keyFile)
		return 2
	}
	answers, err := keyringOnce(ctx, keyringSetup{join: splitList(*join), keys: keys, bind: *bind, advertise: *advertise, timeout: *timeout}, op, key)
	if failed := printAnswers(stdout, op, answers); failed > 0 && err == nil {
		err = fmt.Errorf("%d nodes could not apply %s", failed, op)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil keyring: %v\n", err)
		return 1
	}
	return 0
}

// keyringArgs reads the operation and its key.
func keyringArgs(args []string) (gossip.KeyringOp, []byte, error) {
	if len(args) == 0 {
		return "", nil, errors.New("name an operation: list, install, use, remove or generate")
	}
	op := gossip.KeyringOp(args[0])
	switch op {
	case gossip.KeyringList:
		if len(args) != 1 {
			return "", nil, errors.New("list takes no argument")
		}
		return op, nil, nil
	case gossip.KeyringInstall, gossip.KeyringUse, gossip.KeyringRemove:
		if len(args) != 2 {
			return "", nil, fmt.Errorf("%s takes one KEY (base64, or @FILE)", op)
		}
	default:
		return "", nil, fmt.Errorf("unknown operation %q", args[0])
	}
	if path, ok := strings.CutPrefix(args[1], "@"); ok {
		keys, err := readKeyFile(path)
		if err != nil {
			return "", nil, err
		}
		return op, keys[0], nil
	}
	k, err := gossip.ParseKey(args[1])
	if err != nil {
		return "", nil, err
	}
	return op, k, nil
}

// readKeyFile reads base64 keys, one per line; blank lines and # comments are skipped.
func readKeyFile(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := gossip.ParseKey(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no key", path)
	}
	return keys, nil
}

// keyringSetup is how the command's temporary member joins the pool.
type keyringSetup struct {
	join            []string
	keys            [][]byte
	bind, advertise string
	timeout         time.Duration
}

// keyringOnce joins the pool as a temporary member, applies op everywhere and leaves.
func keyringOnce(ctx context.Context, s keyringSetup, op gossip.KeyringOp, key []byte) (map[string]gossip.KeyringAnswer, error) {
	host, port, err := hostPort(s.bind)
	if err != nil {
		return nil, fmt.Errorf("-bind: %w", err)
	}
	cfg := gossip.Config{
		ID: fmt.Sprintf("keyring-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6), Region: "operator",
		Roles: gossip.RoleControl, Version: version, Keys: s.keys, BindAddr: host, BindPort: port,
		Logger: slog.New(slog.DiscardHandler),
	}
	if s.advertise != "" {
		if cfg.AdvertiseAddr, cfg.AdvertisePort, err = hostPort(s.advertise); err != nil {
			return nil, fmt.Errorf("-advertise: %w", err)
		}
	}
	n, err := gossip.New(cfg)
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(rctx) }()
	defer func() { stop(); <-done }()
	if _, err := n.Join(s.join...); err != nil {
		return nil, fmt.Errorf("join %v: %w", s.join, err)
	}
	// Memberlist's push/pull at the join brings the whole membership.
	octx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return n.Keyring(octx, op, key, time.Second)
}

func hostPort(s string) (string, int, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q", p)
	}
	return host, port, nil
}

// printAnswers writes each node's answer, then a summary of the keys the pool holds; it
// returns how many nodes failed.
func printAnswers(w io.Writer, op gossip.KeyringOp, answers map[string]gossip.KeyringAnswer) int {
	ids := make([]string, 0, len(answers))
	for id := range answers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	primary, installed, failed := map[string]int{}, map[string]int{}, 0
	for _, id := range ids {
		a := answers[id]
		if a.Error != "" {
			failed++
			fmt.Fprintf(w, "%-24s error: %s\n", id, a.Error)
		} else {
			fmt.Fprintf(w, "%-24s primary %s, keys %s\n", id, a.Primary, strings.Join(a.Keys, " "))
		}
		primary[a.Primary]++
		for _, k := range a.Keys {
			installed[k]++
		}
	}
	fmt.Fprintf(w, "%s: %d nodes answered, %d failed\n", op, len(answers), failed)
	fps := make([]string, 0, len(installed))
	for k := range installed {
		fps = append(fps, k)
	}
	sort.Strings(fps)
	for _, k := range fps {
		fmt.Fprintf(w, "key %s: installed on %d of %d nodes, primary on %d\n", k, installed[k], len(answers), primary[k])
	}
	return failed
}
