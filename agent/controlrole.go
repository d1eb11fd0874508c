package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/httpguard"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// controlRole is a raft voter and its HTTP API, as `vigil agent --roles control` runs it.
type controlRole struct {
	cfg    ControlConfig
	dir    string
	node   *control.Server
	api    *control.API
	ln     net.Listener
	srv    *http.Server
	client *http.Client
	reg    prometheus.Registerer // the node's metrics (the notification runner's too)
	closed bool
	// handshaken: ln hands out TLS connections whose handshake is done (with Config.TLS).
	handshaken bool
	// endRequests ends every request's context (blocking reads, forwards) when the API
	// stops.
	endRequests context.CancelFunc
}

// newControlRole opens the voter's data directory, starts raft and binds the API listener.
func newControlRole(cfg Config, reg prometheus.Registerer, tm *tlsconf.Metrics, log *slog.Logger) (*controlRole, error) {
	cc := cfg.Control
	client := cc.Client
	var certs control.ClientCertFunc
	if cfg.TLS != nil {
		certs = cfg.TLS.PeerRoles
		if client == nil {
			client = tlsClient(cfg.TLS)
		}
		if cc.ServerTLS == nil {
			cc.ServerTLS = cfg.TLS.ServerConfig(tlsconf.Peer{Optional: !cc.RequireClientCert})
		}
	}
	if client == nil {
		client = &http.Client{}
	}
	dir := filepath.Join(cfg.DataDir, "control")
	var raftSecret []byte
	if cfg.TLS == nil && !cc.InsecureRaftPlaintext {
		var err error
		if raftSecret, err = loadRaftSecret(cc, dir, log); err != nil {
			return nil, err
		}
	}
	ln, err := listenControlAPI(cfg, &cc, reg)
	if err != nil {
		return nil, err
	}
	node, err := control.NewServer(control.ServerConfig{
		ID: cfg.ID, DataDir: dir, RaftAddr: cc.RaftAddr, RaftAdvertise: cc.RaftAdvertise, APIURL: cc.APIURL, Timing: cc.Timing,
		RaftTLS: cfg.TLS, RaftSecret: raftSecret, InsecureRaftPlaintext: cc.InsecureRaftPlaintext, TLSMetrics: tm,
		Logger: log, RaftLogLevel: max(cc.RaftLogLevel, slog.LevelInfo), Registerer: reg,
		LogStore:     cc.LogStore,
		DNSSECSecret: dnssecSecret(cfg, log),
	})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("node: control: %w", err)
	}
	api, err := control.NewAPI(control.APIConfig{
		Node: node, WriteTokens: cc.WriteTokens, ReadTokens: cc.ReadTokens, Tokens: cc.Tokens, OpenReads: cc.OpenReads, ClientCerts: certs,
		Client: client, Registerer: reg, Logger: log,
	})
	if err != nil {
		ln.Close()
		node.Close()
		return nil, fmt.Errorf("node: control: %w", err)
	}
	g, _ := reg.(prometheus.Gatherer)
	mux := http.NewServeMux()
	if g != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
	mux.Handle("/", api)
	// Requests end when the server's shutdown begins: a blocking read (a Watcher waits up to
	// 30s) would otherwise hold the shutdown until its timeout, the voter still leading with
	// its API closed, so that every write forwarded to it failed meanwhile.
	reqCtx, endRequests := context.WithCancel(context.Background())
	// The path guard sits in front of the outer mux, which would otherwise redirect a path
	// with a ".." segment (307) before the API could refuse it.
	srv := httpguard.Server(mux, cfg.HTTPLimits)
	srv.TLSConfig = cc.ServerTLS
	handshaken := false
	if cfg.TLS != nil && cc.ServerTLS != nil {
		// Handshakes are bounded per source network and counted, not logged, before the server
		// sees the connection (tlsconf.Listener); the server then serves TLS connections.
		ln, handshaken = tlsconf.NewListener(ln, cc.ServerTLS, tlsconf.ListenerLimits{}, "control_api", tm), true
	}
	srv.BaseContext = func(net.Listener) context.Context { return reqCtx }
	srv.RegisterOnShutdown(endRequests)
	return &controlRole{cfg: cc, dir: dir, node: node, api: api, ln: ln, srv: srv, client: client, reg: reg, endRequests: endRequests, handshaken: handshaken}, nil
}

// listenControlAPI binds the control API's listener, its connections bounded by
// cfg.HTTPLimits, and sets cc.APIURL to its address when cc does not set one.
func listenControlAPI(cfg Config, cc *ControlConfig, reg prometheus.Registerer) (net.Listener, error) {
	raw, err := net.Listen("tcp", cc.APIAddr)
	if err != nil {
		return nil, fmt.Errorf("node: control: API listener: %w", err)
	}
	ln, err := httpguard.Listen(raw, cfg.HTTPLimits, reg, "control_api")
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("node: control: API listener: %w", err)
	}
	if cc.APIURL == "" {
		scheme := "http"
		if cc.ServerTLS != nil {
			scheme = "https"
		}
		cc.APIURL = scheme + "://" + ln.Addr().String()
	}
	return ln, nil
}

// run serves the API, bootstraps or joins the cluster, and stops the voter when ctx ends.
func (c *controlRole) run(ctx context.Context, log *slog.Logger) error {
	serveErr := make(chan error, 1)
	go func() {
		var err error
		if c.cfg.ServerTLS != nil && !c.handshaken {
			err = c.srv.ServeTLS(c.ln, "", "")
		} else {
			err = c.srv.Serve(c.ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		serveErr <- err
	}()
	joinDone := make(chan error, 1)
	switch {
	case c.node.HasExistingState():
		log.Info("node: control: restarting from the data directory", "dir", c.dir)
		joinDone <- nil
	case c.cfg.Bootstrap && c.cfg.BootstrapCheckWait > 0 && len(c.others()) > 0:
		go func() { joinDone <- c.bootstrapOrJoin(ctx, log) }()
	case c.cfg.Bootstrap:
		joinDone <- c.node.Bootstrap()
	case len(c.cfg.Join) > 0:
		go func() {
			joinDone <- joinCluster(ctx, c.client, c.cfg.Join, firstOf(c.cfg.WriteTokens),
				state.JoinRequest{ID: c.node.ID(), RaftAddress: c.node.RaftAddr(), API: c.cfg.APIURL}, log)
		}()
	default:
		log.Warn("node: control: no state, no bootstrap and no join: waiting to be added by a voter of a cluster")
		joinDone <- nil
	}
	log.Info("node: control: voter running", "api", c.cfg.APIURL, "raft", c.node.RaftAddr(), "dir", c.dir)
	stopNotify := c.runNotify(ctx, log)
	defer stopNotify()
	stopReload := c.reloadTokens(ctx, log)
	defer stopReload()
	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		if err == nil {
			err = errors.New("API server stopped")
		}
		err = fmt.Errorf("API server: %w", err)
	case err = <-joinDone:
		if err == nil {
			select {
			case <-ctx.Done():
			case err = <-serveErr:
				err = fmt.Errorf("API server: %w", err)
			}
		}
	}
	stopNotify()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.srv.Shutdown(sctx)
	if cerr := c.close(); err == nil {
		err = cerr
	}
	return err
}

// reloadTokens follows the voter's token files, when it was given them, until the returned
// function is called or ctx ends.
func (c *controlRole) reloadTokens(ctx context.Context, log *slog.Logger) func() {
	if c.cfg.TokenFile == "" && c.cfg.ReadTokenFile == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := control.WatchTokenFiles(ctx, control.TokenReloadConfig{
			WritePath: c.cfg.TokenFile, ReadPath: c.cfg.ReadTokenFile, Every: c.cfg.TokenRecheck,
			Apply: func(ts control.TokenSet) error {
				if len(ts.Write) == 0 && len(ts.Named) == 0 && len(c.cfg.WriteTokens)+len(c.cfg.Tokens) > 0 {
					return errors.New("the -token-file holds no write token: no operator could write; keep at least one")
				}
				c.api.SetTokens(ts)
				return nil
			},
			Logger: log, Registerer: c.reg,
		})
		if err != nil {
			log.Error("node: control: token files are not reloaded; restart the voter to take a change", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// APIAddr returns the address the API listens on.
func (c *controlRole) apiAddr() string { return c.ln.Addr().String() }

// close stops the voter and its listener.
func (c *controlRole) close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.endRequests()
	c.ln.Close()
	return c.node.Close()
}

// joinCluster asks the given voters, in turn, to add this one, until one accepts or ctx ends.
func joinCluster(ctx context.Context, hc *http.Client, voters []string, token string, jr state.JoinRequest, log *slog.Logger) error {
	voters = slices.DeleteFunc(slices.Clone(voters), func(s string) bool { return strings.TrimSpace(s) == "" })
	if len(voters) == 0 {
		return errors.New("join: no voter to join")
	}
	backoff := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		v := strings.TrimRight(strings.TrimSpace(voters[attempt%len(voters)]), "/")
		err := joinOnce(ctx, hc, v, token, jr)
		if err == nil {
			log.Info("node: control: joined the cluster", "via", v)
			return nil
		}
		log.Warn("node: control: join failed, retrying", "via", v, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("join: %w", ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// others returns the voters' API URLs of the bootstrap check, without this voter's own.
func (c *controlRole) others() []string {
	self := strings.TrimRight(c.cfg.APIURL, "/")
	var out []string
	for _, u := range c.cfg.BootstrapCheck {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" && u != self {
			out = append(out, u)
		}
	}
	return out
}

// bootstrapOrJoin starts a new cluster unless another voter knows one already: a voter that
// bootstraps whenever its data directory is empty would, after losing its volume, start a
// second cluster beside the running one, two leaders each with its own configuration.
func (c *controlRole) bootstrapOrJoin(ctx context.Context, log *slog.Logger) error {
	others, token := c.others(), firstOf(append(slices.Clone(c.cfg.WriteTokens), c.cfg.ReadTokens...))
	at, errs := findCluster(ctx, c.client, others, token, c.cfg.BootstrapCheckWait)
	if at != "" {
		log.Warn("node: control: a cluster exists at "+at+": joining it instead of bootstrapping", "voters", others)
		return joinCluster(ctx, c.client, others, firstOf(c.cfg.WriteTokens),
			state.JoinRequest{ID: c.node.ID(), RaftAddress: c.node.RaftAddr(), API: c.cfg.APIURL}, log)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("bootstrap check: %w", ctx.Err())
	}
	if err := refusedUs(errs); err != nil {
		return err
	}
	if len(errs) > 0 {
		// Nobody said a cluster exists, but some did not answer: at a first start they are
		// still starting; a voter that lost its volume while the others are down or
		// unreachable cannot tell, and bootstraps.
		log.Warn("node: control: bootstrapping: no voter answered that a cluster exists; unanswered ones are listed",
			"wait", c.cfg.BootstrapCheckWait, "unanswered", errors.Join(errs...))
	} else {
		log.Info("node: control: bootstrapping: every other voter answered that it has no cluster", "voters", others)
	}
	return c.node.Bootstrap()
}

// findCluster asks each voter (GET /v1/cluster) whether it belongs to a cluster, again and
// again, until one answers with a leader or a configuration (its URL is returned), every one
// has answered that it has none, or wait has passed. The errors are those of the voters
// that never answered.
func findCluster(ctx context.Context, hc *http.Client, voters []string, token string, wait time.Duration) (string, []error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pending := map[string]error{}
	for _, v := range voters {
		pending[v] = errors.New("not asked")
	}
	for {
		for _, v := range voters {
			if _, ok := pending[v]; !ok {
				continue
			}
			exists, err := askCluster(ctx, hc, v, token)
			switch {
			case err != nil:
				pending[v] = fmt.Errorf("%s: %w", v, err)
			case exists:
				return v, nil
			default:
				delete(pending, v)
			}
		}
		if len(pending) == 0 {
			return "", nil
		}
		select {
		case <-ctx.Done():
			var errs []error
			for _, v := range voters {
				if err, ok := pending[v]; ok {
					errs = append(errs, err)
				}
			}
			return "", errs
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// refusedUs returns an error naming the voters that refused this voter's credentials (401 or
// 403) while it asked whether a cluster exists, or nil. Such a voter runs, and may belong to
// a cluster this voter cannot see: bootstrapping then could start a second one. At a first
// start every voter holds the same tokens and answers; a voter that refuses them wants its
// token or certificate fixed, not a cluster of its own.
func refusedUs(errs []error) error {
	var refused []string
	for _, err := range errs {
		var ce *client.Error
		if errors.As(err, &ce) && (ce.StatusCode == http.StatusUnauthorized || ce.StatusCode == http.StatusForbidden) {
			refused = append(refused, err.Error())
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("not bootstrapping: %d voter(s) refused this voter's credentials, so a cluster may run there unseen (%s): give this voter the voters' token or a certificate of their CA, or start it without -bootstrap-id once the cluster runs",
		len(refused), strings.Join(refused, "; "))
}

// askCluster reports whether the voter at url knows a cluster: a leader or a configuration
// of at least one voter. An empty voter that waits to join knows neither.
func askCluster(ctx context.Context, hc *http.Client, url, token string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cl, err := client.New(client.Config{Voters: []string{url}, Token: token, HTTP: hc})
	if err != nil {
		return false, err
	}
	cv, err := cl.Cluster(ctx)
	if err != nil {
		return false, err
	}
	return cv.Leader != "" || len(cv.Servers) > 0, nil
}

// joinOnce asks one voter to add this one. With TLS, the voter's certificate may join
// without a token.
func joinOnce(ctx context.Context, hc *http.Client, voter, token string, jr state.JoinRequest) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, err := client.New(client.Config{Voters: []string{voter}, Token: token, HTTP: hc})
	if err != nil {
		return err
	}
	_, err = c.JoinVoter(ctx, jr)
	return err
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
