package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// Response headers of every read.
const (
	headerIndex       = "X-Vigil-Index"
	headerKnownLeader = "X-Vigil-Known-Leader"
	headerLastContact = "X-Vigil-Last-Contact"
	headerStale       = "X-Vigil-Stale"
	headerForwarded   = "X-Vigil-Forwarded"
)

// read answers a GET: authentication is done; this handles readiness, ?consistent,
// blocking (?index=N&wait=30s) and the metadata, then renders the state.
func (a *API) read(w http.ResponseWriter, r *http.Request, render func(s *state.State) (any, error)) {
	n := a.cfg.Node
	q := r.URL.Query()
	_, consistent := q["consistent"]
	index, wait, err := a.readQuery(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if consistent && !n.IsLeader() {
		if r.Header.Get(headerForwarded) != "" {
			writeError(w, http.StatusServiceUnavailable, fmt.Errorf("%w: leadership is changing, retry", ErrNoLeader))
			return
		}
		a.forward(w, r, nil)
		return
	}
	if !n.Ready() {
		writeError(w, http.StatusServiceUnavailable, ErrNotReady)
		return
	}
	s := n.State()
	if _, blocking := q["index"]; blocking && s.Index <= index {
		var ok bool
		if s, ok = a.waitPast(r.Context(), index, wait); !ok {
			writeError(w, http.StatusTooManyRequests, errors.New("control: too many blocking reads waiting on this voter; retry later or use another voter"))
			return
		}
	}
	if consistent {
		if err := n.Barrier(); err != nil {
			writeError(w, statusOf(err), err)
			return
		}
		s = n.State()
	}
	leaderID, _ := n.Leader()
	last := n.LastContact()
	meta := state.ReadMeta{
		Index:       s.Index,
		Consistent:  consistent,
		KnownLeader: leaderID != "",
		Stale:       !n.IsLeader() && (leaderID == "" || time.Since(last) > a.cfg.StaleAfter),
	}
	v, err := render(s)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	setReadHeaders(w.Header(), meta, last)
	if st, ok := v.(stream); ok {
		writeStream(w, meta, st)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		state.ReadMeta
		Data any `json:"data"`
	}{meta, v})
}

// readQuery parses a read's ?index and ?wait: the index a blocking read waits past, and for
// how long at most. Its error is a config.Errors naming the parameter.
func (a *API) readQuery(q url.Values) (uint64, time.Duration, error) {
	var index uint64
	if v := q.Get("index"); v != "" {
		var err error
		if index, err = strconv.ParseUint(v, 10, 64); err != nil {
			return 0, 0, config.Errors{{Path: "index", Message: fmt.Sprintf("not an index: %q", v)}}
		}
	}
	wait := a.cfg.DefaultWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, 0, config.Errors{{Path: "wait", Message: fmt.Sprintf("not a duration: %q (want e.g. 30s)", v)}}
		}
		wait = min(d, a.cfg.MaxWait)
	}
	return index, wait, nil
}

// waitPast waits at most wait, or until ctx ends, for the state past index and returns the
// state then; ok is false, at once, when too many blocking reads wait already.
func (a *API) waitPast(ctx context.Context, index uint64, wait time.Duration) (s *state.State, ok bool) {
	select {
	case a.watchers <- struct{}{}:
		ctx, cancel := context.WithTimeout(ctx, wait)
		s = a.cfg.Node.Wait(ctx, index)
		cancel()
		<-a.watchers
		return s, true
	default:
		return nil, false
	}
}

// setReadHeaders sets the metadata headers of a read, with last the voter's last contact
// with the leader.
func setReadHeaders(h http.Header, meta state.ReadMeta, last time.Time) {
	h.Set(headerIndex, strconv.FormatUint(meta.Index, 10))
	h.Set(headerKnownLeader, strconv.FormatBool(meta.KnownLeader))
	h.Set(headerStale, strconv.FormatBool(meta.Stale))
	if !last.IsZero() {
		h.Set(headerLastContact, strconv.FormatInt(time.Since(last).Milliseconds(), 10))
	}
}

// stream is a read's data written item by item, for answers as large as the configuration:
// they are not held in memory whole.
type stream func(w *bufio.Writer) error

// writeStream answers a read whose data is a stream, in the form of every read:
// {"index": ..., "stale": ..., "known_leader": ..., "data": ...}.
func writeStream(w http.ResponseWriter, meta state.ReadMeta, st stream) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	head, _ := json.Marshal(meta)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"data":`)
	if err := st(bw); err != nil {
		return // the status is sent: the client sees a truncated body, which does not decode
	}
	bw.WriteString("}\n")
	_ = bw.Flush()
}

// list streams a JSON list of the items seq yields.
func list[T any](seq func(yield func(T) bool)) stream {
	return func(w *bufio.Writer) error {
		w.WriteByte('[')
		first := true
		for v := range seq {
			if !first {
				w.WriteByte(',')
			}
			first = false
			b, err := json.Marshal(v)
			if err == nil {
				_, err = w.Write(b)
			}
			if err != nil {
				return err
			}
		}
		_, err := w.WriteString("]")
		return err
	}
}

func (a *API) getState(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *state.State) (any, error) { return stream(forReader(r, s).StreamJSON), nil })
}

// forReader returns s as the API streams it whole to the reader of r (State.forReaders),
// without the sealed halves of zones' keys for a principal that may not have them.
func forReader(r *http.Request, s *state.State) *state.State {
	s = s.ForReaders()
	if principalOf(r).NoSealedKeys {
		s = s.WithoutSealed()
	}
	return s
}

func (a *API) getDocument(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *state.State) (any, error) { return stream(s.ForReaders().StreamDocument), nil })
}

func (a *API) listChecks(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *state.State) (any, error) { return list(s.Checks()), nil })
}

func (a *API) getCheck(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a.read(w, r, func(s *state.State) (any, error) {
		if c, ok := s.Check(id); ok {
			return c, nil
		}
		return nil, fmt.Errorf("control: check %q: %w", id, state.ErrNotFound)
	})
}

func (a *API) listZones(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *state.State) (any, error) {
		return list(func(yield func(state.ZoneView) bool) {
			for h := range s.ZoneHeads() {
				z, _ := s.Zone(h.Name)
				if !yield(state.ZoneView{Zone: z, Shard: s.Shard(h.Name)}) {
					return
				}
			}
		}), nil
	})
}

func (a *API) getZone(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("zone")
	a.read(w, r, func(s *state.State) (any, error) {
		if z, ok := s.Zone(name); ok {
			return state.ZoneView{Zone: z, Shard: s.Shard(z.Name)}, nil
		}
		return nil, fmt.Errorf("control: zone %q: %w", name, state.ErrNotFound)
	})
}

func (a *API) listRecordSets(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("zone")
	a.read(w, r, func(s *state.State) (any, error) {
		if _, ok := s.ZoneHead(name); ok {
			return list(s.RecordSets(name)), nil
		}
		return nil, fmt.Errorf("control: zone %q: %w", name, state.ErrNotFound)
	})
}

func (a *API) getRecordSet(w http.ResponseWriter, r *http.Request) {
	zone, name, typ := r.PathValue("zone"), r.PathValue("name"), config.RecordType(strings.ToUpper(r.PathValue("type")))
	a.read(w, r, func(s *state.State) (any, error) {
		if rs, ok := s.RecordSet(zone, name, typ); ok {
			return rs, nil
		}
		return nil, fmt.Errorf("control: record set %s %s in zone %q: %w", name, typ, zone, state.ErrNotFound)
	})
}

// getChanges answers what changed after ?index=N, blocking like every read until there is
// something: the items changed, or the whole state (streamed) when this voter's change log
// does not reach back to N.
func (a *API) getChanges(w http.ResponseWriter, r *http.Request) {
	from, err := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, config.Errors{{Path: "index", Message: "required: the index the caller's state is at (0 for none)"}})
		return
	}
	a.read(w, r, func(s *state.State) (any, error) {
		if d := a.cfg.Node.fsm.delta(from, s); d != nil && from > 0 {
			if principalOf(r).NoSealedKeys {
				d = d.WithoutSealed()
			}
			return state.ChangesView{Delta: d}, nil
		}
		return stream(forReader(r, s).WriteFull), nil
	})
}

func (a *API) getCluster(w http.ResponseWriter, r *http.Request) {
	n := a.cfg.Node
	servers, err := n.Servers()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	leader, _ := n.Leader()
	s := n.State()
	w.Header().Set(headerIndex, strconv.FormatUint(s.Index, 10))
	writeJSON(w, http.StatusOK, state.ClusterView{
		ID: n.ID(), Leader: leader, Servers: servers, APIs: s.Voters, Ready: n.Ready(), Raft: n.Stats(),
	})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return slices.Clip(make([]T, 0))
	}
	return s
}
