package node

import (
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/gossip"
)

// Every evaluation's verdicts reach the reads (Verdicts, the status API, the sim's sampler)
// as they reach DNS, even when the configuration changes while the location evaluates, as it
// does under steady control-plane writes. Found by `vigil sim chaos`: an evaluation that
// overlapped a configuration change gave DNS its verdicts and the reads nothing, so DNS
// briefly served a verdict no read ever saw.
func TestVerdictsInstalledDespiteConfigChanges(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "loc", "us-east", RoleLocation, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.DNSAddr, cfg.HTTPAddr, cfg.Static = "127.0.0.1:0", "off", doc
	cfg.Logger, cfg.Registerer = testLogger(), newReg()
	n := mustNew(t, cfg)
	t.Cleanup(n.Close)

	// Configuration changes as fast as they come, each a new index of the same document.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := uint64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := control.NewState(doc)
			s.Index = i
			n.setConfig(s, control.SourceControlPlane)
		}
	})
	const rounds = 300
	for i := range rounds {
		n.mu.Lock()
		before := n.loc.evaluations
		n.mu.Unlock()
		n.evaluate(time.Now())
		n.mu.Lock()
		after := n.loc.evaluations
		n.mu.Unlock()
		v, err := n.Verdicts()
		if err != nil || after != before+1 || len(v) != len(doc.Checks) {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: evaluations %d -> %d, %d verdicts of %d checks readable (%v): DNS has them, reads do not",
				i, before, after, len(v), len(doc.Checks), err)
		}
	}
	close(stop)
	wg.Wait()
}
