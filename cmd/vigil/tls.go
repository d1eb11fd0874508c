package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// runTLS runs `vigil tls init`: a CA and node certificates for a development or demo network.
func runTLS(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := dispatchHelp("tls", args, stdout, stderr); stop {
		return code
	}
	fs := newFlagSet("tls init", stderr)
	days := fs.Int("days", 397, "days the node certificates are valid")
	caDays := fs.Int("ca-days", 3650, "days a new CA is valid")
	hosts := fs.String("host", "localhost,127.0.0.1,::1", "comma-separated DNS names and IP addresses every certificate is valid for, besides its name and its own @HOSTs")
	keyMode := fs.String("key-mode", "0600", "mode of the key files written (a demo whose containers run as another user needs 0644)")
	if code, stop := parseFlags(ctx, fs, args[1:], stdout, stderr); stop {
		return code
	}
	if fs.NArg() < 2 {
		fs.Usage()
		return 2
	}
	mode, err := strconv.ParseUint(*keyMode, 8, 32)
	if err != nil || mode&^0o777 != 0 {
		fmt.Fprintf(stderr, "vigil tls init: -key-mode %q: want an octal mode such as 0600\n", *keyMode)
		return 2
	}
	var reqs []tlsconf.Request
	for _, a := range fs.Args()[1:] {
		r, err := parseCertRequest(a, splitList(*hosts))
		if err != nil {
			fmt.Fprintf(stderr, "vigil tls init: %v\n", err)
			return 2
		}
		reqs = append(reqs, r)
	}
	day := 24 * time.Hour
	written, err := tlsconf.Init(fs.Arg(0), reqs, tlsconf.InitOptions{Now: time.Now(),
		CAValid: time.Duration(*caDays) * day, CertValid: time.Duration(*days) * day, KeyMode: os.FileMode(mode)})
	for _, w := range written {
		fmt.Fprintln(stdout, w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil tls init: %v\n", err)
		return 1
	}
	return 0
}

// parseCertRequest reads NAME=ROLE[+ROLE...][@HOST,...].
func parseCertRequest(s string, common []string) (tlsconf.Request, error) {
	spec, hostList, _ := strings.Cut(s, "@")
	name, roleList, ok := strings.Cut(spec, "=")
	if !ok || name == "" || roleList == "" {
		return tlsconf.Request{}, fmt.Errorf("%q: want NAME=ROLE[+ROLE...][@HOST,...]", s)
	}
	r := tlsconf.Request{Name: name, Hosts: append(append([]string(nil), common...), splitList(hostList)...)}
	for _, role := range strings.Split(roleList, "+") {
		switch role {
		case tlsconf.RoleControl, tlsconf.RoleChecker, tlsconf.RoleLocation, tlsconf.RoleOperator:
			r.Roles = append(r.Roles, role)
		default:
			return r, fmt.Errorf("%q: unknown role %q (control, checker, location, operator)", s, role)
		}
	}
	return r, nil
}

// caPool reads the certificates of a PEM file into a pool of its own.
func caPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", path)
	}
	return pool, nil
}
