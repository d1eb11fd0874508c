package status

import "testing"

// TestHostPortURL: a member is asked at the HTTP address it advertises, its missing host taken
// from its gossip address; a member of an earlier build, which advertises none, at this node's
// port.
func TestHostPortURL(t *testing.T) {
	url := HostPortURL("7701")
	for _, c := range []struct {
		m    Member
		want string
	}{
		{Member{Addr: "10.0.0.1:7946"}, "http://10.0.0.1:7701"},
		{Member{Addr: "10.0.0.1:7946", HTTP: ":8081"}, "http://10.0.0.1:8081"},
		{Member{Addr: "10.0.0.1:7946", HTTP: "192.0.2.9:8082"}, "http://192.0.2.9:8082"},
		{Member{Addr: "[2001:db8::1]:7946", HTTP: ":8083"}, "http://[2001:db8::1]:8083"},
		{Member{Addr: "no port"}, ""},
		{Member{Addr: "10.0.0.1:7946", HTTP: "no port"}, ""},
	} {
		if got := url(c.m); got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
	if got := HostPortURL("")(Member{Addr: "10.0.0.1:7946"}); got != "" {
		t.Errorf("no port known: %q", got)
	}
}
