package location

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkAdmitOverBudget is what a flooded virtual name server spends on each query beyond
// its budget, after reading it: the budget's refusal and the drop's count.
func BenchmarkAdmitOverBudget(b *testing.B) {
	s, err := New(Config{Addr: "127.0.0.1:0", NameServers: map[int]string{12: "127.0.0.1:0"}, NameServerBudget: 1,
		Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	l, err := s.bind(12, "127.0.0.1:0", 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer l.close()
	s.admit(l) // spends the one saved token
	admitted := 0
	for b.Loop() {
		if s.admit(l) {
			admitted++
		}
	}
	if admitted > 2+int(b.Elapsed().Seconds()) {
		b.Fatalf("%d queries admitted at 1 q/s", admitted)
	}
}
