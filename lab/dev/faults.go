package dev

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/regions"
)

// Fault kinds.
const (
	// FaultTargetDown: a demo target's /healthz fails.
	FaultTargetDown = "target-down"
	// FaultCut: the link between two regions is cut, both ways.
	FaultCut = string(regions.Cut)
)

// Fault is one fault in force.
type Fault struct {
	// Kind is FaultTargetDown or FaultCut.
	Kind string `json:"kind"`
	// Regions are the target's region, or the two regions of a cut link.
	Regions []string `json:"regions"`
}

// String says the fault in words.
func (f Fault) String() string {
	switch f.Kind {
	case FaultTargetDown:
		return "target " + strings.Join(f.Regions, ",") + " is down"
	case FaultCut:
		return "link " + strings.Join(f.Regions, " <-> ") + " is cut"
	}
	return f.Kind + " " + strings.Join(f.Regions, ",")
}

// FaultList is the body of every answer of the dev endpoints.
type FaultList struct {
	// Faults are the faults in force, never null.
	Faults []Fault `json:"faults"`
}

// CutRequest is the body of POST /v1/dev/cut: one region (cut from every other) or two.
type CutRequest struct {
	// Regions names one region (cut from every other) or two (the link between them).
	Regions []string `json:"regions"`
}

// SetTargetDown makes region r's demo target fail its health check (down) or pass it.
func (n *Network) SetTargetDown(r string, down bool) error {
	if n.cluster.SetTargetDown(r, down) != nil {
		return fmt.Errorf("dev: no target in region %q (regions: %s)", r, strings.Join(n.cfg.Regions, ", "))
	}
	n.log.Info("dev: fault", "target", r, "down", down)
	return nil
}

// Cut cuts the links between two regions, or between one region and every other.
func (n *Network) Cut(rs ...string) error {
	for _, r := range rs {
		if !slices.Contains(n.cfg.Regions, r) {
			return fmt.Errorf("dev: unknown region %q (regions: %s)", r, strings.Join(n.cfg.Regions, ", "))
		}
	}
	if len(rs) == 0 || len(rs) > 2 || len(rs) == 2 && rs[0] == rs[1] {
		return fmt.Errorf("dev: a cut names one region or two different regions, not %q", rs)
	}
	f := regions.Fault{Kind: regions.Cut, A: rs[0]}
	if len(rs) == 2 {
		f.B = rs[1]
	}
	return n.Apply(f)
}

// Heal restores every link between regions. Targets stay as they are.
func (n *Network) Heal() { _ = n.Apply(regions.Fault{Kind: regions.Heal}) }

// Apply changes the links between regions by f: Cut and Heal are its shorthands, the
// scenario scripts apply the other kinds too.
func (n *Network) Apply(f regions.Fault) error {
	if err := n.cluster.Apply(f); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	n.log.Info("dev: fault", "link", f.String())
	return nil
}

// Faults lists the faults in force: targets down, then cut links, in region order.
func (n *Network) Faults() []Fault {
	out := []Fault{}
	for _, r := range n.cfg.Regions {
		if n.cluster.Target(r).Down() {
			out = append(out, Fault{Kind: FaultTargetDown, Regions: []string{r}})
		}
	}
	for i, a := range n.cfg.Regions {
		for _, b := range n.cfg.Regions[i+1:] {
			if n.cluster.Network().LinkState(a, b).Cut || n.cluster.Network().LinkState(b, a).Cut {
				out = append(out, Fault{Kind: FaultCut, Regions: []string{a, b}})
			}
		}
	}
	return out
}

// faultsHandler serves the dev endpoints:
//
//	GET  /v1/dev/faults                 the faults in force
//	POST /v1/dev/targets/{region}/down  a target fails its health check
//	POST /v1/dev/targets/{region}/up    it passes again
//	POST /v1/dev/cut                    {"regions": ["sa-east"]} or two regions
//	POST /v1/dev/heal                   every link restored
//
// Every answer is the fault list, or {"error": "..."}.
func (n *Network) faultsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/dev/faults", func(w http.ResponseWriter, _ *http.Request) { n.writeFaults(w, nil) })
	mux.HandleFunc("POST /v1/dev/targets/{region}/{state}", func(w http.ResponseWriter, r *http.Request) {
		var err error
		switch s := r.PathValue("state"); s {
		case "down", "up":
			err = n.SetTargetDown(r.PathValue("region"), s == "down")
		default:
			err = fmt.Errorf("dev: target state %q: want down or up", s)
		}
		n.writeFaults(w, err)
	})
	mux.HandleFunc("POST /v1/dev/cut", func(w http.ResponseWriter, r *http.Request) {
		var req CutRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			n.writeFaults(w, fmt.Errorf("dev: cut: body: %w", err))
			return
		}
		n.writeFaults(w, n.Cut(req.Regions...))
	})
	mux.HandleFunc("POST /v1/dev/heal", func(w http.ResponseWriter, _ *http.Request) {
		n.Heal()
		n.writeFaults(w, nil)
	})
	mux.HandleFunc("/v1/dev/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, errorBody{Error: "dev: no such endpoint: " + r.Method + " " + r.URL.Path})
	})
	return mux
}

func (n *Network) writeFaults(w http.ResponseWriter, err error) {
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, FaultList{Faults: n.Faults()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// errorBody is an error answer of the dev endpoints.
type errorBody struct {
	// Error says what was wrong.
	Error string `json:"error"`
}
