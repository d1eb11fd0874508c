package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/internal/safetext"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// defaultServer is the API URL a client command talks to without -server or $VIGIL_SERVER:
// the default of `vigil agent -api`.
const defaultServer = "http://127.0.0.1:7100"

// The environment variables of the client configuration, each standing for a flag that
// overrides it.
const (
	envServer     = "VIGIL_SERVER"      // -server
	envToken      = "VIGIL_TOKEN"       // the token itself (no flag: a command line is not secret)
	envTokenFile  = "VIGIL_TOKEN_FILE"  // -token-file
	envCACert     = "VIGIL_CACERT"      // -tls-ca
	envClientCert = "VIGIL_CLIENT_CERT" // -tls-cert
	envClientKey  = "VIGIL_CLIENT_KEY"  // -tls-key
)

// clientFlags are the client configuration shared by every command that talks to the
// control plane's API (apply, override, audit, dnssec, externaldns, load writes): where
// the voters are, the token, and the TLS files. Each flag falls back to its environment
// variable, so that one `export` line serves every command.
type clientFlags struct {
	server, tokenFile, ca, cert, key string
	// set lists the flags given on the command line (after parse), to tell them from
	// the environment's values.
	set map[string]bool
	// tokenFrom says where the token came from, for the error of a refused one.
	tokenFrom string
}

// register adds -server, -token-file, -tls-ca, -tls-cert and -tls-key to fs. Their values
// are read by resolve, after fs.Parse.
func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "comma-separated API URLs of voters; any of them forwards to the leader (default $"+envServer+", else "+defaultServer+")")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the API token, its first line (default: the token of $"+envToken+", else the file of $"+envTokenFile+")")
	fs.StringVar(&f.ca, "tls-ca", "", "CA file (PEM) that verifies the voters' certificates, for https:// servers (default $"+envCACert+"; without either, the system's CAs)")
	fs.StringVar(&f.cert, "tls-cert", "", "client certificate (PEM) to present, for voters that require one; with the operator role it writes without a token; needs -tls-key and -tls-ca (default $"+envClientCert+")")
	fs.StringVar(&f.key, "tls-key", "", "key file of -tls-cert (default $"+envClientKey+")")
}

// resolve fills the flags not given from their environment variables, and the server from
// its default. Call it after fs.Parse.
func (f *clientFlags) resolve(fs *flag.FlagSet) {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	env := func(v *string, name, envName string) {
		if !f.set[name] {
			*v = strings.TrimSpace(os.Getenv(envName))
		}
	}
	env(&f.server, "server", envServer)
	env(&f.ca, "tls-ca", envCACert)
	env(&f.cert, "tls-cert", envClientCert)
	env(&f.key, "tls-key", envClientKey)
	if f.server == "" {
		f.server = defaultServer
	}
}

// source names where a setting came from: its flag, or its environment variable.
func (f *clientFlags) source(name, envName string) string {
	if f.set[name] {
		return "-" + name
	}
	return "$" + envName
}

// voters returns the URLs of -server.
func (f *clientFlags) voters() ([]string, error) {
	v := splitList(f.server)
	if len(v) == 0 {
		return nil, errors.New("-server names no voter: give -server https://HOST:PORT or set " + envServer)
	}
	return v, nil
}

// token returns the token to send: of -token-file, else $VIGIL_TOKEN, else of the file of
// $VIGIL_TOKEN_FILE; "" when none is configured (reads may be open, a certificate may stand
// in for it).
func (f *clientFlags) token() (string, error) {
	path, from := f.tokenFile, "-token-file"
	if !f.set["token-file"] {
		if t := strings.TrimSpace(os.Getenv(envToken)); t != "" {
			f.tokenFrom = "$" + envToken
			return t, nil
		}
		path, from = strings.TrimSpace(os.Getenv(envTokenFile)), "$"+envTokenFile
	}
	if path == "" {
		return "", nil
	}
	tokens, err := readTokens(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w: give -token-file or %s a readable file, or set %s", from, err, envTokenFile, envToken)
	}
	if len(tokens) == 0 {
		return "", fmt.Errorf("%s: no token in %s (one token a line; # starts a comment)", from, path)
	}
	f.tokenFrom = from + " " + path
	return tokens[0], nil
}

// httpClient returns the HTTP client the TLS settings describe: plain, verifying the voters
// with the CA, or presenting the client certificate too (then the voters must have the
// control role).
func (f *clientFlags) httpClient() (*http.Client, error) {
	switch {
	case f.cert != "" || f.key != "":
		if f.cert == "" || f.key == "" {
			return nil, fmt.Errorf("a client certificate needs its key and the CA: give -tls-cert and -tls-key (or %s and %s) together", envClientCert, envClientKey)
		}
		if f.ca == "" {
			return nil, fmt.Errorf("%s needs the CA that verifies the voters: give -tls-ca or set %s", f.source("tls-cert", envClientCert), envCACert)
		}
		s, err := tlsconf.Load(tlsconf.Files{Cert: f.cert, Key: f.key, CA: f.ca}, tlsconf.Options{})
		if err != nil {
			return nil, fmt.Errorf("the client certificate (%s, %s): %w", f.source("tls-cert", envClientCert), f.source("tls-key", envClientKey), err)
		}
		// The server must be a voter (the control role): the token and writes go nowhere else.
		return &http.Client{Transport: &http.Transport{TLSClientConfig: s.ClientConfig(tlsconf.Peer{Roles: []string{tlsconf.RoleControl}})}}, nil
	case f.ca != "":
		pool, err := caPool(f.ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.source("tls-ca", envCACert), err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
	}
	return &http.Client{}, nil
}

// client returns the API client of the configuration. Its error is a usage error (exit 2):
// nothing was asked of a voter yet.
func (f *clientFlags) client() (*client.Client, error) {
	token, err := f.token()
	if err != nil {
		return nil, err
	}
	voters, err := f.voters()
	if err != nil {
		return nil, err
	}
	hc, err := f.httpClient()
	if err != nil {
		return nil, err
	}
	c, err := client.New(client.Config{Voters: voters, Token: token, HTTP: hc})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.source("server", envServer), err)
	}
	return c, nil
}

// fix returns what to do about err, an error of a call to the voters, or "" when there is
// nothing the client configuration could change. Every client command prints it after the
// error: the flag or variable that fixes it.
func (f *clientFlags) fix(err error) string {
	var (
		e     *client.Error
		unk   x509.UnknownAuthorityError
		host  x509.HostnameError
		inval x509.CertificateInvalidError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &e) && e.StatusCode == http.StatusUnauthorized, strings.Contains(msg, "401 Unauthorized"):
		if f.tokenFrom == "" {
			return "the server wants a token and none was sent: give -token-file or set " + envToken + " (or " + envTokenFile + "), or a client certificate with the operator role (-tls-cert/-tls-key)"
		}
		return "the server refused the token (from " + f.tokenFrom + "): give -token-file or " + envToken + " with a token the voters' -token-file holds"
	case errors.As(err, &e) && e.StatusCode == http.StatusForbidden:
		return "the token or certificate may not do this: use one whose scope allows it (vigil token create -scope)"
	case errors.As(err, &e) && e.StatusCode == http.StatusBadRequest && strings.Contains(e.Message, "HTTPS server"):
		return "the voter speaks TLS: give -server https://... (or " + envServer + "), with -tls-ca or " + envCACert
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"):
		return "no voter answers at " + f.server + ": is it running? set -server or " + envServer + " (`vigil dev` listens on http://127.0.0.1:7700, the compose demo on https://127.0.0.1:7700)"
	case errors.As(err, &unk):
		return "the voter's certificate is not signed by a CA this client trusts: give -tls-ca or set " + envCACert + " to the CA file of the voters (the compose demo's is deploy/compose/tls/ca.pem)"
	case errors.As(err, &host):
		return "the voter's certificate is not valid for the host of -server: use a name or address it names (" + msg[strings.LastIndex(msg, "valid for")+len("valid for"):] + ")"
	case errors.As(err, &inval):
		return "the voter's certificate does not verify (expired, or not for a server): renew it with vigil tls init"
	case strings.Contains(msg, "certificate required") || strings.Contains(msg, "bad certificate"):
		return "the voter requires a client certificate of its CA: give -tls-cert and -tls-key (or set " + envClientCert + " and " + envClientKey + ")"
	case strings.Contains(msg, "has none of the roles"):
		return "the server's certificate has no control role: -server (or " + envServer + ") must name a voter's API"
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return "the voter speaks plain HTTP: give -server http://... (or " + envServer + ")"
	case strings.Contains(msg, "no such host"):
		return "the host of -server does not resolve: check -server or " + envServer
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || strings.Contains(msg, "EOF") || strings.Contains(msg, "connection broken"):
		// A voter that refuses the handshake closes the connection; a request already
		// on its way (a write's body) then meets a reset or a broken pipe, not the alert.
		switch {
		case !strings.Contains(f.server, "https://"):
			return "the voter closed the connection: if it speaks TLS, give -server https://... (or " + envServer + ") with -tls-ca or " + envCACert
		case f.cert == "":
			return "the voter closed the connection: it may require a client certificate of its CA: give -tls-cert and -tls-key (or set " + envClientCert + " and " + envClientKey + ")"
		}
		return "the voter closed the connection: is the client certificate (" + f.source("tls-cert", envClientCert) + ") of the voters' CA and valid?"
	}
	return ""
}

// fail prints a failed call's error with its fix, and returns exit code 1 (0 for a nil err).
// An API error answer prints its status, message and every problem; the server's words are
// escaped (a hostile or old server could send line breaks and terminal escapes).
func (f *clientFlags) fail(stderr io.Writer, cmd string, err error) int {
	if err == nil {
		return 0
	}
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Fprintf(stderr, "vigil %s: HTTP %d: %s\n", cmd, e.StatusCode, safetext.Escape(e.Message))
		for _, fe := range e.Problems {
			fmt.Fprintf(stderr, "  %s\n", safetext.Escape(fe.Error()))
		}
	} else {
		fmt.Fprintf(stderr, "vigil %s: %s\n", cmd, safetext.Escape(err.Error()))
	}
	if fix := f.fix(err); fix != "" {
		fmt.Fprintf(stderr, "  fix: %s\n", fix)
	}
	return 1
}

// usageErr prints a configuration error found before any call, and returns exit code 2.
func usageErr(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "vigil %s: %v\n", cmd, err)
	return 2
}
