package control

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// forward sends a request that only the leader can answer (a write, a linearizable read) to
// the leader's API and copies its answer back. A request already forwarded once is not
// forwarded again: leadership is moving, and the client should retry.
func (a *API) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Header.Get(headerForwarded) != "" {
		writeError(w, http.StatusServiceUnavailable, fmt.Errorf("%w: leadership is changing, retry", ErrNoLeader))
		return
	}
	id, url := a.leader(r.Context())
	switch {
	case id == "":
		writeError(w, http.StatusServiceUnavailable, ErrNoLeader)
		return
	case url == "":
		writeError(w, http.StatusServiceUnavailable, fmt.Errorf("%w: the leader %s has not recorded its API address yet, retry", ErrNoLeader, id))
		return
	case id == a.cfg.Node.ID():
		writeError(w, http.StatusServiceUnavailable, fmt.Errorf("%w: leadership is changing, retry", ErrNoLeader))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.MaxWait+30*time.Second)
	defer cancel()
	// A body that came compressed goes on compressed: decompressed, it may be over the
	// leader's limit of the bytes a request sends.
	var send io.Reader = bytes.NewReader(body)
	compressed := r.Header.Get("Content-Encoding") != ""
	if compressed {
		pr, pw := io.Pipe()
		go func() {
			zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
			_, err := zw.Write(body)
			pw.CloseWithError(errors.Join(err, zw.Close()))
		}()
		defer pr.Close()
		send = pr
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, url+r.URL.RequestURI(), send)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("control: forward to leader: %w", err))
		return
	}
	if compressed {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for _, h := range []string{"Authorization", "Content-Type", "Accept"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set(headerForwarded, a.cfg.Node.ID())
	// Who authenticated here: the leader records it as the write's author when this
	// voter's certificate vouches for it, and ignores it otherwise (forwardedPrincipal).
	req.Header.Set(headerPrincipal, principalOf(r).Name)
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return
		}
		writeError(w, http.StatusBadGateway, fmt.Errorf("control: forward to leader %s at %s: %w; the write may not have been applied", id, url, err))
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k == "Content-Type" || len(k) > 8 && k[:8] == "X-Vigil-" || k == "Www-Authenticate" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// leader returns the leader's ID and API URL, waiting up to LeaderWait for one to be known:
// just after an election a follower may not have heard the new leader yet.
func (a *API) leader(ctx context.Context) (id, url string) {
	deadline := time.Now().Add(a.cfg.LeaderWait)
	for {
		id, url = a.cfg.Node.Leader()
		if (id != "" && url != "" && id != a.cfg.Node.ID()) || time.Now().After(deadline) {
			return id, url
		}
		select {
		case <-ctx.Done():
			return id, url
		case <-time.After(20 * time.Millisecond):
		}
	}
}
