package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/vigil-dns/vigil/config"
)

// The JSON form of a State, streamed item by item both ways, so that writing or reading the
// state of a million checks holds one item at a time beside the state itself:
//
//	{"index": 7, "document": {"regions": [...], "quorum": {...}, "name_servers": {...},
//	  "checks": [...], "zones": [{..., "record_sets": [...]}]},
//	 "shards": {"example.test.": [1, 2, 3, 4]}, "zone_keys": {"example.test.": {...}},
//	 "voters": {"v0": "http://..."}}
//
// zone_keys holds the DNSSEC keys of signed zones, each private key sealed (package dnssec):
// never in the document, never in clear. tsig_keys, present when there are any, holds the TSIG
// keys of transfers, each secret sealed the same way (tsig.go).
//
// It is the document as GET /v1/document shows it, inside the index, shards and voters: the
// body of GET /v1/state, of a full answer of GET /v1/changes, of a raft snapshot and of a
// data-plane node's copy on disk.

// WriteJSON writes s as JSON to w.
func (s *State) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := s.StreamJSON(bw); err != nil {
		return fmt.Errorf("control: write state: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("control: write state: %w", err)
	}
	return nil
}

// WriteFull writes s as the answer of GET /v1/changes that carries the whole state (ReadChanges
// reads it): {"full":true,"state":…}.
func (s *State) WriteFull(w *bufio.Writer) error {
	w.WriteString(`{"full":true,"state":`)
	if err := s.StreamJSON(w); err != nil {
		return err
	}
	_, err := w.WriteString("}")
	return err
}

func (s *State) StreamJSON(w *bufio.Writer) error {
	fmt.Fprintf(w, `{"index":%d,"document":`, s.Index)
	if err := s.StreamDocument(w); err != nil {
		return err
	}
	w.WriteString(`,"shards":{`)
	first := true
	for apex, servers := range s.shards.All("") {
		if !first {
			w.WriteByte(',')
		}
		first = false
		if err := writeKV(w, apex, servers); err != nil {
			return err
		}
	}
	w.WriteString(`}`)
	if err := s.writeZoneKeys(w); err != nil {
		return err
	}
	if err := s.writeTSIG(w); err != nil {
		return err
	}
	w.WriteString(`,"voters":`)
	if err := writeValue(w, s.Voters); err != nil {
		return err
	}
	if !opsEmpty(s.ops) {
		w.WriteString(`,"ops":`)
		if err := writeValue(w, s.ops); err != nil {
			return err
		}
	}
	_, err := w.WriteString("}")
	return err
}

// StreamDocument writes the configuration as one document.
func (s *State) StreamDocument(w *bufio.Writer) error {
	head, err := json.Marshal(s.settings) // checks and zones are null: replaced below
	if err != nil {
		return err
	}
	head, ok := bytes.CutSuffix(head, []byte(`,"checks":null,"zones":null}`))
	if !ok {
		return errors.New("unexpected form of the document's settings")
	}
	w.Write(head)
	w.WriteString(`,"checks":[`)
	first := true
	for c := range s.Checks() {
		if !first {
			w.WriteByte(',')
		}
		first = false
		if err := writeValue(w, c); err != nil {
			return err
		}
	}
	w.WriteString(`],"zones":[`)
	first = true
	for z := range s.ZoneHeads() {
		if !first {
			w.WriteByte(',')
		}
		first = false
		if err := s.writeZone(w, z); err != nil {
			return err
		}
	}
	_, err = w.WriteString("]}")
	return err
}

// writeZone writes a zone with its record sets.
func (s *State) writeZone(w *bufio.Writer, z *config.Zone) error {
	h := *z
	h.RecordSets = nil
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	head, ok := bytes.CutSuffix(head, []byte(`,"record_sets":null}`))
	if !ok {
		return errors.New("unexpected form of a zone")
	}
	w.Write(head)
	w.WriteString(`,"record_sets":[`)
	first := true
	for rs := range s.RecordSets(z.Name) {
		if !first {
			w.WriteByte(',')
		}
		first = false
		if err := writeValue(w, rs); err != nil {
			return err
		}
	}
	_, err = w.WriteString("]}")
	return err
}

func writeValue(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func writeKV(w *bufio.Writer, k string, v any) error {
	if err := writeValue(w, k); err != nil {
		return err
	}
	w.WriteByte(':')
	return writeValue(w, v)
}

// ReadState reads a State in the JSON form WriteJSON writes, one item at a time.
func ReadState(r io.Reader) (*State, error) {
	return readState(json.NewDecoder(bufio.NewReaderSize(r, 64<<10)))
}

// readState reads a State from the next value of dec.
func readState(dec *json.Decoder) (*State, error) {
	sr := stateReader{dec: dec}
	s, err := sr.read()
	if err != nil {
		return nil, fmt.Errorf("control: read state: %w", err)
	}
	return s, nil
}

type stateReader struct {
	dec *json.Decoder
	e   *Edit
}

// delim reads the next token and checks that it is the delimiter want.
func (r *stateReader) delim(want json.Delim) error {
	t, err := r.dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, t)
	}
	return nil
}

// object reads a JSON object, calling field for the value of each key.
func (r *stateReader) object(field func(key string) error) error {
	if err := r.delim('{'); err != nil {
		return err
	}
	for r.dec.More() {
		t, err := r.dec.Token()
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok {
			return fmt.Errorf("want a key, got %v", t)
		}
		if err := field(key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return r.delim('}')
}

// array reads a JSON array (or null), calling item for each element.
func (r *stateReader) array(item func() error) error {
	t, err := r.dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("want a list, got %v", t)
	}
	for i := 0; r.dec.More(); i++ {
		if err := item(); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return r.delim(']')
}

func (r *stateReader) read() (*State, error) {
	r.e = Empty().Edit(0)
	settings := config.DefaultDocument()
	var index uint64
	err := r.object(func(key string) error {
		switch key {
		case "index":
			return r.dec.Decode(&index)
		case "document":
			return r.document(&settings)
		case "shards":
			var shards map[string][]int
			if err := r.dec.Decode(&shards); err != nil {
				return err
			}
			for apex, servers := range shards {
				if servers != nil {
					r.e.setShard(apex, servers)
				}
			}
			return nil
		case "zone_keys":
			return r.readZoneKeys()
		case "tsig_keys":
			return r.readTSIG()
		case "voters":
			return r.dec.Decode(&r.e.Next.Voters)
		case "ops":
			var raw json.RawMessage
			if err := r.dec.Decode(&raw); err != nil {
				return err
			}
			o, err := readOps(raw)
			r.e.Next.ops = o
			return err
		}
		var skip json.RawMessage
		return r.dec.Decode(&skip)
	})
	if err != nil {
		return nil, err
	}
	r.e.SetSettings(&settings)
	r.e.Next.Index = index
	return r.e.Next, nil
}

// document reads a document: its settings into settings, its checks and zones into the state.
func (r *stateReader) document(settings *config.Document) error {
	return r.object(func(key string) error {
		switch key {
		case "regions":
			return r.dec.Decode(&settings.Regions)
		case "quorum":
			return r.dec.Decode(&settings.Quorum)
		case "name_servers":
			return r.dec.Decode(&settings.NameServers)
		case "notifications":
			return r.dec.Decode(&settings.Notifications)
		case "checks":
			r.e.SetSettings(settings) // first, so that checks share the document's regions
			return r.array(func() error {
				c := &config.Check{}
				if err := r.dec.Decode(c); err != nil {
					return err
				}
				r.e.PutCheck(c)
				return nil
			})
		case "zones":
			return r.array(r.zone)
		}
		var skip json.RawMessage
		return r.dec.Decode(&skip)
	})
}

// zone reads one zone: its head whole, its record sets one at a time.
func (r *stateReader) zone() error {
	var head bytes.Buffer
	head.WriteByte('{')
	var sets []*config.RecordSet
	err := r.object(func(key string) error {
		if key == "record_sets" {
			return r.array(func() error {
				rs := &config.RecordSet{}
				if err := r.dec.Decode(rs); err != nil {
					return err
				}
				sets = append(sets, rs)
				return nil
			})
		}
		var v json.RawMessage
		if err := r.dec.Decode(&v); err != nil {
			return err
		}
		if head.Len() > 1 {
			head.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		head.Write(k)
		head.WriteByte(':')
		head.Write(v)
		return nil
	})
	if err != nil {
		return err
	}
	head.WriteByte('}')
	var z config.Zone
	if err := json.Unmarshal(head.Bytes(), &z); err != nil {
		return err
	}
	apex := CanonicalZone(z.Name)
	r.e.putZoneHead(&z)
	for _, rs := range sets {
		r.e.putSet(apex, rs)
	}
	return nil
}

// MarshalJSON writes s in its JSON form (see WriteJSON), whole in memory: for small states
// and tests; streams use WriteJSON.
func (s *State) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnmarshalJSON reads s from its JSON form (see ReadState).
func (s *State) UnmarshalJSON(data []byte) error {
	got, err := ReadState(bytes.NewReader(data))
	if err != nil {
		return err
	}
	*s = *got
	return nil
}

// ReadChanges reads the answer of a read of /v1/changes (or, legacy, of /v1/state): a delta,
// or a whole state read one item at a time.
func ReadChanges(dec *json.Decoder, legacy bool) (*State, *Delta, error) {
	r := stateReader{dec: dec}
	var s *State
	var d *Delta
	err := r.object(func(key string) error {
		if key != "data" {
			var skip json.RawMessage
			return dec.Decode(&skip)
		}
		if legacy {
			var err error
			s, err = readState(dec)
			return err
		}
		return r.object(func(key string) error {
			switch key {
			case "delta":
				d = &Delta{}
				return dec.Decode(d)
			case "state":
				var err error
				s, err = readState(dec)
				return err
			}
			var skip json.RawMessage
			return dec.Decode(&skip)
		})
	})
	if err == nil && s == nil && d == nil {
		err = errors.New("neither a state nor a delta")
	}
	return s, d, err
}
