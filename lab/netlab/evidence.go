package netlab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// evidenceEvery is how often the evidence recorder reads every location's status API.
const evidenceEvery = time.Second

// recordEvidence reads, every second until ctx ends, each running location's verdicts with
// their evidence, its gossip members and the checkers it hears (status API: /v1/verdicts, /v1/members, /v1/checkers), and appends
// them to <dir>/evidence/<location>.jsonl, one JSON object a line: {"at", "verdicts",
// "members"}. It is for a reader of a failed run (why did a location answer so); nothing
// judges it. The reads come from inside the location's region.
func (r *run) recordEvidence(ctx context.Context, dir string) {
	out := filepath.Join(dir, "evidence")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return
	}
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	tick := time.NewTicker(evidenceEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, l := range r.fleet.ofKind(KindLocation) {
			if !l.running() {
				continue
			}
			f := files[l.ID]
			if f == nil {
				var err error
				if f, err = os.Create(filepath.Join(out, l.ID+".jsonl")); err != nil {
					return
				}
				files[l.ID] = f
			}
			line := map[string]any{"at": time.Now().UTC()}
			for _, path := range []string{"verdicts", "members", "checkers"} {
				var v json.RawMessage
				cctx, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
				err := call(cctx, r.client, "", http.MethodGet, "http://"+l.Addrs["http"]+"/v1/"+path, nil, &v)
				cancel()
				if err != nil {
					line[path+"_error"] = err.Error()
					continue
				}
				line[path] = v
			}
			data, err := json.Marshal(line)
			if err != nil {
				continue
			}
			fmt.Fprintf(f, "%s\n", data)
		}
	}
}
