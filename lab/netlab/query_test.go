package netlab

import (
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestQuerierSkipsLateAnswers: an answer that arrives after its query timed out is not taken
// for the next query's answer; a refused port is recorded as an error with its instants.
func TestQuerierSkipsLateAnswers(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	// The server answers the first query late (after the client's timeout) with 192.0.2.99,
	// and every later one at once with 192.0.2.1.
	go func() {
		buf := make([]byte, 1500)
		for i := 0; ; i++ {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dns.Msg
			if m.Unpack(buf[:n]) != nil {
				continue
			}
			r := new(dns.Msg)
			r.SetReply(&m)
			value := "192.0.2.1"
			if i == 0 {
				value = "192.0.2.99"
				time.Sleep(300 * time.Millisecond)
			}
			rr, _ := dns.NewRR(m.Question[0].Name + " 30 IN A " + value)
			r.Answer = append(r.Answer, rr)
			out, _ := r.Pack()
			_, _ = pc.WriteTo(out, from)
		}
	}()
	conn, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	q := &querier{location: &Proc{ID: "us-east-location"}, names: QueryNames(), timeout: 200 * time.Millisecond, conn: conn}
	defer q.close()
	first := q.ask(t.Context(), "all."+Zone+".")
	if !first.TimedOut || first.Received.Before(first.Sent.Add(200*time.Millisecond)) {
		t.Errorf("first query: %+v, want a timeout after 200ms", first)
	}
	time.Sleep(200 * time.Millisecond) // the late answer is now waiting in the socket
	second := q.ask(t.Context(), "all."+Zone+".")
	if second.TimedOut || second.Err != "" || len(second.Values) != 1 || second.Values[0] != "192.0.2.1" {
		t.Errorf("second query: %+v, want its own answer 192.0.2.1", second)
	}
	pc.Close()
	time.Sleep(50 * time.Millisecond)
	third := q.ask(t.Context(), "all."+Zone+".")
	if third.Err == "" && !third.TimedOut || third.Received.Before(third.Sent) {
		t.Errorf("query to a closed port: %+v, want an error or a timeout, received after sent", third)
	}
}
