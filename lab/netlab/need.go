package netlab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ErrMissing wraps the error of Check when the machine lacks something the harness needs.
var ErrMissing = errors.New("netlab: this machine cannot run real-process networks")

// Check reports what the harness needs and the machine lacks: root (network namespaces,
// nftables, TUN devices), the `ip` and `nft` commands and /dev/net/tun. The error wraps
// ErrMissing and names every missing piece.
func Check() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network namespaces, nftables and TUN devices need it)")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			pkg := map[string]string{"ip": "iproute2", "nft": "nftables"}[tool]
			missing = append(missing, fmt.Sprintf("the %s command (Debian package %s)", tool, pkg))
		}
	}
	if f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0); err != nil {
		missing = append(missing, fmt.Sprintf("/dev/net/tun (%v)", err))
	} else {
		f.Close()
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrMissing, strings.Join(missing, "; "))
	}
	return nil
}
