package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vigil-dns/vigil/control"
)

// agentFlags is the configuration of `vigil agent`.
type agentFlags struct {
	roles, id, dataDir, raftAddr, apiAddr, apiURL string
	bootstrap                                     bool
	join                                          string
	tokenFile, readTokenFile                      string
	openReads                                     bool
	tlsCert, tlsKey, tlsCA                        string
	logLevel                                      string
}

// runAgent runs the roles of one node. Today that is the control role: a raft voter and
// its HTTP API (with /metrics beside it).
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f agentFlags
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.roles, "roles", "control", "comma-separated roles to run (control)")
	fs.StringVar(&f.id, "id", "", "this voter's raft ID (default: the host name)")
	fs.StringVar(&f.dataDir, "data-dir", "vigil-data", "directory of the raft log, stable store and snapshots")
	fs.StringVar(&f.raftAddr, "raft-addr", "127.0.0.1:7000", "address of the raft transport (listen and advertise)")
	fs.StringVar(&f.apiAddr, "api-addr", "127.0.0.1:7100", "address of the HTTP API")
	fs.StringVar(&f.apiURL, "api-url", "", "URL other voters reach this API at (default from -api-addr)")
	fs.BoolVar(&f.bootstrap, "bootstrap", false, "start a new cluster with this voter as its first member")
	fs.StringVar(&f.join, "join", "", "comma-separated API URLs of voters of the cluster to join")
	fs.StringVar(&f.tokenFile, "token-file", "", "file of bearer tokens allowed to write, one per line (required)")
	fs.StringVar(&f.readTokenFile, "read-token-file", "", "file of bearer tokens allowed to read, one per line")
	fs.BoolVar(&f.openReads, "open-reads", false, "let anyone read without a token")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "certificate file: serve the API over TLS")
	fs.StringVar(&f.tlsKey, "tls-key", "", "key file of -tls-cert")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "CA file to verify other voters' APIs (forwarding and joining)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, r := range strings.Split(f.roles, ",") {
		if r = strings.TrimSpace(r); r != "control" {
			fmt.Fprintf(stderr, "vigil agent: role %q is not available yet (available: control)\n", r)
			return 2
		}
	}
	if err := runControl(ctx, f, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "vigil agent: %v\n", err)
		return 1
	}
	return 0
}

func runControl(ctx context.Context, f agentFlags, stdout, stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if f.id == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("-id: %w", err)
		}
		f.id = h
	}
	writeTokens, err := readTokens(f.tokenFile)
	if err != nil {
		return err
	}
	if len(writeTokens) == 0 {
		return errors.New("-token-file with at least one write token is required: no token, no write")
	}
	readTokenList, err := readTokens(f.readTokenFile)
	if err != nil {
		return err
	}
	client, serverTLS, err := tlsSetup(f)
	if err != nil {
		return err
	}
	scheme := "http"
	if serverTLS != nil {
		scheme = "https"
	}
	if f.apiURL == "" {
		f.apiURL = scheme + "://" + f.apiAddr
	}
	reg := prometheus.NewRegistry()
	node, err := control.NewNode(control.NodeConfig{
		ID: f.id, DataDir: f.dataDir, RaftAddr: f.raftAddr, APIURL: f.apiURL,
		Logger: log, RaftLogLevel: max(level, slog.LevelInfo), Registerer: reg,
	})
	if err != nil {
		return err
	}
	defer node.Close()
	api, err := control.NewAPI(control.APIConfig{
		Node: node, WriteTokens: writeTokens, ReadTokens: readTokenList, OpenReads: f.openReads,
		Client: client, Registerer: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", api)
	ln, err := net.Listen("tcp", f.apiAddr)
	if err != nil {
		return fmt.Errorf("API listener: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, TLSConfig: serverTLS}
	serveErr := make(chan error, 1)
	go func() {
		if serverTLS != nil {
			serveErr <- srv.ServeTLS(ln, "", "")
		} else {
			serveErr <- srv.Serve(ln)
		}
	}()
	defer srv.Close()

	switch {
	case node.HasExistingState():
		log.Info("vigil agent: restarting from the data directory", "dir", f.dataDir)
	case f.bootstrap:
		if err := node.Bootstrap(); err != nil {
			return err
		}
	case f.join != "":
		if err := joinCluster(ctx, client, strings.Split(f.join, ","), writeTokens[0], control.JoinRequest{ID: f.id, RaftAddress: f.raftAddr, API: f.apiURL}, log); err != nil {
			return err
		}
	default:
		log.Warn("vigil agent: no state, no -bootstrap and no -join: waiting to be added by a voter of a cluster")
	}
	fmt.Fprintf(stdout, "vigil agent: voter %s: API %s, raft %s, data %s\n", f.id, f.apiURL, node.RaftAddr(), f.dataDir)
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("API server: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return node.Close()
}

// readTokens reads one token per line; blank lines and lines starting with # are skipped.
func readTokens(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, nil
}

// tlsSetup returns the client for other voters' APIs and, with -tls-cert, the server's TLS.
func tlsSetup(f agentFlags) (*http.Client, *tls.Config, error) {
	client := &http.Client{}
	if f.tlsCA != "" {
		pem, err := os.ReadFile(f.tlsCA)
		if err != nil {
			return nil, nil, fmt.Errorf("-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("-tls-ca: no certificate in %s", f.tlsCA)
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	if f.tlsCert == "" {
		return client, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert, filepath.Clean(f.tlsKey))
	if err != nil {
		return nil, nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
	}
	return client, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// joinCluster asks the given voters, in turn, to add this one, until one accepts or ctx ends.
func joinCluster(ctx context.Context, client *http.Client, voters []string, token string, jr control.JoinRequest, log *slog.Logger) error {
	body, err := json.Marshal(jr)
	if err != nil {
		return err
	}
	voters = slices.DeleteFunc(voters, func(s string) bool { return strings.TrimSpace(s) == "" })
	backoff := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		v := strings.TrimRight(strings.TrimSpace(voters[attempt%len(voters)]), "/")
		err := joinOnce(ctx, client, v, token, body)
		if err == nil {
			log.Info("vigil agent: joined the cluster", "via", v)
			return nil
		}
		log.Warn("vigil agent: join failed, retrying", "via", v, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("join: %w", ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func joinOnce(ctx context.Context, client *http.Client, voter, token string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, voter+"/v1/cluster/voters", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(out)))
	}
	return nil
}
