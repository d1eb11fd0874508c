package main

import (
	"flag"
	"fmt"

	"github.com/vigil-dns/vigil/agent"
)

// registerDNSSEC defines the flags of the DNSSEC seal secret and signing budget on fs, bound to f.
func (f *agentFlags) registerDNSSEC(fs *flag.FlagSet) {
	fs.StringVar(&f.dnssecSecretFile, "dnssec-secret-file", "", "control and location: file of base64 secrets, one per line (vigil keyring generate makes one): the first seals signed zones' private keys (voters) and opens them to sign (locations); the others are older secrets that only open. Give it to voters and locations only, the same file everywhere; without it a voter refuses to enable signing and a location serves signed zones unsigned")
	fs.IntVar(&f.dnssecSignBudget, "dnssec-sign-budget", 0, "location: new DNSSEC signatures a second this location makes across its signed zones, shared fairly between them; a query whose answer needs one more is dropped (vigil_location_queries_dropped_total{reason=\"sign_budget\"}), never answered unsigned; 0 (default): half of the cores at the signing cost measured at start")
	fs.BoolVar(&f.insecureDNSSECFromGossip, "insecure-dnssec-secret-from-gossip-key", false, "control and location: seal DNSSEC keys with the first gossip key instead of -dnssec-secret-file, as older builds did (migration only: every checker holds that key and can unseal every zone's signing keys)")
}

// agentDNSSEC sets cfg's DNSSEC seal secrets and signing budget from the flags.
func agentDNSSEC(cfg *agent.Config, f agentFlags) error {
	cfg.InsecureDNSSECSecretFromGossipKey = f.insecureDNSSECFromGossip
	if f.dnssecSignBudget < 0 {
		return fmt.Errorf("-dnssec-sign-budget %d: want new signatures a second, or 0 for the default measured from the CPU", f.dnssecSignBudget)
	}
	cfg.DNSSECSignBudget = float64(f.dnssecSignBudget)
	if f.dnssecSecretFile == "" {
		return nil
	}
	if f.insecureDNSSECFromGossip {
		return fmt.Errorf("-dnssec-secret-file and -insecure-dnssec-secret-from-gossip-key are exclusive: to move off the gossip key, list it after the new secret in -dnssec-secret-file")
	}
	keys, err := readKeyFile(f.dnssecSecretFile)
	if err != nil {
		return fmt.Errorf("-dnssec-secret-file: %w", err)
	}
	cfg.DNSSECSecret, cfg.DNSSECOlderSecrets = keys[0], keys[1:]
	return nil
}
