package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/vigil-dns/vigil/regions"
)

// Handler serves the router's control API, on the loopback of its namespace:
//
//	GET  /v1/links   the table of links and faults, one line per direction
//	POST /v1/faults  {"command": ["cut", "sa-east"]}: change the faults, answer the table
//	GET  /v1/stats   what this router did with the packets it sent, per direction
func (r *Router) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/links", func(w http.ResponseWriter, _ *http.Request) {
		writeLines(w, r.Lines())
	})
	mux.HandleFunc("POST /v1/faults", func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Command []string `json:"command"`
		}
		if err := json.NewDecoder(io.LimitReader(req.Body, 1<<16)).Decode(&body); err != nil {
			http.Error(w, "router: bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		lines, err := r.Apply(body.Command)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeLines(w, lines)
	})
	mux.HandleFunc("GET /v1/stats", func(w http.ResponseWriter, _ *http.Request) {
		var lines []string
		for _, p := range r.cfg.Peers {
			s := r.Stats()[regions.Link{From: r.cfg.Region, To: p.Region}]
			lines = append(lines, fmt.Sprintf("%s -> %s sent %d, cut %d, lost %d, overflow %d",
				r.cfg.Region, p.Region, s.Sent, s.Cut, s.Lost, s.Overflow))
		}
		writeLines(w, lines)
	})
	return mux
}

func writeLines(w http.ResponseWriter, lines []string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// Control sends one command to the control API at base ("http://127.0.0.1:7990"): "links"
// and "stats" read, anything else changes the faults (see Faults.Apply). It returns the
// router's answer, one line per direction.
func Control(ctx context.Context, base string, command []string) (string, error) {
	method, path, body := http.MethodPost, "/v1/faults", []byte(nil)
	switch {
	case len(command) == 1 && (command[0] == "links" || command[0] == "stats"):
		method, path = http.MethodGet, "/v1/"+command[0]
	default:
		b, err := json.Marshal(map[string][]string{"command": command})
		if err != nil {
			return "", fmt.Errorf("router: %w", err)
		}
		body = b
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("router: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("router: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("router: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		// The router's own message, which starts with "router:".
		msg := strings.TrimSpace(string(out))
		if !strings.HasPrefix(msg, "router: ") {
			msg = "router: " + msg
		}
		return "", errors.New(msg)
	}
	return string(out), nil
}
