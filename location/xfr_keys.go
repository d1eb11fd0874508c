package location

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ReadTSIGKeys reads TSIG keys, one a line in the form dig -y and kdig -y take:
// "[algorithm:]name:secret", e.g. "hmac-sha256:vigil-xfr.:c2VjcmV0...". Blank lines and
// lines starting with # are skipped. The error names every line that is not a key; the keys
// are checked further by SetTransfers (algorithm, secret).
func ReadTSIGKeys(r io.Reader) ([]TSIGKey, error) {
	var keys []TSIGKey
	var errs []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		var k TSIGKey
		switch len(parts) {
		case 2:
			k = TSIGKey{Name: parts[0], Secret: parts[1]}
		case 3:
			k = TSIGKey{Algorithm: parts[0], Name: parts[1], Secret: parts[2]}
		default:
			errs = append(errs, fmt.Sprintf("line %d: want [algorithm:]name:secret, as dig -y takes", n))
			continue
		}
		if k.Name == "" || k.Secret == "" {
			errs = append(errs, fmt.Sprintf("line %d: a key needs a name and a secret", n))
			continue
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tsig keys: %w", err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("tsig keys: %s", strings.Join(errs, "; "))
	}
	return keys, nil
}
