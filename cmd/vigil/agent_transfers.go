package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/location"
)

// registerTransfers defines the flag of the TSIG keys of zone transfers on fs, bound to f.
func (f *agentFlags) registerTransfers(fs *flag.FlagSet) {
	fs.StringVar(&f.tsigKeysFile, "tsig-keys-file", "", "location: file of the TSIG keys of the secondaries it transfers zones to (a zone's transfers section), one a line as dig -y takes them: [algorithm:]name:secret (hmac-sha256, hmac-sha384 or hmac-sha512; base64 secret). Give it to the locations that feed secondaries only. The keys the control plane holds (vigil tsig put), which a location opens with -dnssec-secret-file, are added; a name in both is the file's")
}

// agentTransfers sets cfg's TSIG keys from the flags.
func agentTransfers(cfg *agent.Config, f agentFlags) error {
	if f.tsigKeysFile == "" {
		return nil
	}
	if !cfg.Roles.Has(agent.RoleLocation) {
		return fmt.Errorf("-tsig-keys-file: only a location transfers zones; give the keys to the locations alone")
	}
	file, err := os.Open(f.tsigKeysFile)
	if err != nil {
		return fmt.Errorf("-tsig-keys-file: %w", err)
	}
	defer file.Close()
	keys, err := location.ReadTSIGKeys(file)
	if err != nil {
		return fmt.Errorf("-tsig-keys-file %s: %w", f.tsigKeysFile, err)
	}
	if err := location.CheckTSIGKeys(keys); err != nil {
		return fmt.Errorf("-tsig-keys-file %s: %w", f.tsigKeysFile, err)
	}
	cfg.TSIGKeys = keys
	return nil
}
