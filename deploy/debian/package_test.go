// Package debian's tests build the Debian package with build.sh, install it into this
// machine with dpkg, run what its unit runs, and remove and purge it again.
package debian

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/syncbuf"
)

const testToken = "pkg-test-token"

// needRootDpkg skips, saying why, where the package cannot be installed.
func needRootDpkg(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("installs a package into this machine: needs root (.ci/run runs as root)")
	}
	for _, c := range []string{"dpkg", "dpkg-deb"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("needs %s: this is not a Debian or Ubuntu machine", c)
		}
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("packages are built for amd64 and arm64, this machine is %s", runtime.GOARCH)
	}
}

// buildDeb runs build.sh for this machine's architecture, with env added to the environment,
// and returns the package's path.
func buildDeb(t *testing.T, env ...string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("./build.sh", "0.0.0-test", runtime.GOARCH, t.TempDir())
	cmd.Env = append(append(os.Environ(), "DEB_COMPRESS=gzip"), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("build.sh: %v\n%s%s", err, out, stderr)
	}
	deb := strings.TrimSpace(string(out))
	t.Logf("build.sh built %s in %v", filepath.Base(deb), time.Since(start).Round(100*time.Millisecond))
	return deb
}

// TestDebianVersion holds build.sh's Debian versions to the order of the releases they come
// from, as dpkg compares them: a pre-release before its release, a commit after a tag after
// the tag and before the next release, so that apt upgrades along the releases.
func TestDebianVersion(t *testing.T) {
	deb := func(v string) string {
		t.Helper()
		out, err := exec.Command("./build.sh", "-debversion", v).Output()
		if err != nil {
			t.Fatalf("build.sh -debversion %s: %v", v, err)
		}
		return strings.TrimSpace(string(out))
	}
	for v, want := range map[string]string{"v1.2.3": "1.2.3", "1.4.0-rc1": "1.4.0~rc1", "1.0.0-alpha-1": "1.0.0~alpha.1",
		"1.2.3-4-gabc123": "1.2.3+4+gabc123", "1.2.3-4-gabc123-dirty": "1.2.3+4+gabc123+dirty",
		"1.4.0-rc1-2-gabc": "1.4.0~rc1+2+gabc", "e9a07cf": "0~gite9a07cf", "e9a07cf-dirty": "0~gite9a07cf+dirty"} {
		if got := deb(v); got != want {
			t.Errorf("%s: Debian version %s, want %s", v, got, want)
		}
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("no dpkg to compare versions with")
	}
	order := []string{"e9a07cf", "0.9.0", "1.0.0-alpha-1", "1.0.0-rc1", "1.0.0-rc1-2-gabc", "1.0.0-rc2", "1.0.0", "1.0.0-3-gdef", "1.0.1-rc1", "1.0.1"}
	for i := 1; i < len(order); i++ {
		a, b := deb(order[i-1]), deb(order[i])
		if err := exec.Command("dpkg", "--compare-versions", a, "lt", b).Run(); err != nil {
			t.Errorf("dpkg orders %s (%s) after %s (%s)", a, order[i-1], b, order[i])
		}
	}
}

// run runs a command and returns its combined output, failing the test when it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dpkg runs dpkg, waiting while another dpkg or apt holds its lock (the machine is shared).
func dpkg(t *testing.T, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := exec.Command("dpkg", args...).CombinedOutput()
		if err == nil {
			return string(out)
		}
		if !strings.Contains(string(out), "lock") || time.Now().After(deadline) {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		time.Sleep(2 * time.Second)
	}
}

// installed says whether dpkg has the package vigil installed, or its files half-installed
// or its conffiles left ("config-files").
func installed() (bool, string) {
	out, err := exec.Command("dpkg-query", "-W", "-f=${db:Status-Abbrev}", "vigil").Output()
	return err == nil && strings.TrimSpace(string(out)) != "un", strings.TrimSpace(string(out))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestDebianPackage builds the package (twice: the same bytes), installs it into this
// machine, checks what it installed, verifies its unit with systemd-analyze, runs the unit's
// command line with the packaged configuration edited as an operator would, holds the exit
// statuses to the unit's restart policy, upgrades it over the edited configuration, builds a
// three-node network from packaged layouts, and on the way out removes (conffile kept, the
// unit disabled) and purges (nothing left) the package.
func TestDebianPackage(t *testing.T) {
	needRootDpkg(t)
	if ok, status := installed(); ok {
		t.Fatalf("a package vigil is installed here already (dpkg status %q): this test installs and purges its own; run dpkg -P vigil first", status)
	}
	for cmd, pkg := range map[string]string{"systemd-analyze": "systemd", "dig": "bind9-dnsutils", "adduser": "adduser"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Fatalf("needs %s: apt-get install %s (.ci/run does)", cmd, pkg)
		}
	}
	_, userErr := user.Lookup("vigil")
	hadUser := userErr == nil
	deb := buildDeb(t)

	t.Run("contents", func(t *testing.T) { checkContents(t, deb) })
	t.Run("reproducible", func(t *testing.T) {
		// Another temporary directory for the staging tree and the Go build: the same bytes.
		again := buildDeb(t, "TMPDIR="+t.TempDir())
		a, _ := os.ReadFile(deb)
		b, _ := os.ReadFile(again)
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("two builds of one tree differ: %s (%d bytes) and %s (%d bytes); compare them with diffoscope", deb, len(a), again, len(b))
		}
	})

	start := time.Now()
	dpkg(t, "-i", deb)
	t.Logf("dpkg -i took %v", time.Since(start).Round(10*time.Millisecond))
	t.Cleanup(func() { removeAndPurge(t, hadUser) })
	checkInstalled(t)

	t.Run("systemd-analyze", func(t *testing.T) { checkUnit(t) })
	t.Run("unit runs the packaged config", func(t *testing.T) { runInstalled(t) })
	t.Run("exit status and restarts", func(t *testing.T) { exitStatus(t) })
	t.Run("upgrade keeps the edited config", func(t *testing.T) { upgradeKeepsConfig(t, deb) })
	t.Run("three nodes from packaged layouts", func(t *testing.T) { threeNodes(t, deb) })
}

// checkContents reads the package as dpkg will install it: the files, the conffile, the
// architecture and a static binary.
func checkContents(t *testing.T, deb string) {
	if got := strings.TrimSpace(run(t, "dpkg-deb", "-f", deb, "Architecture")); got != runtime.GOARCH {
		t.Errorf("Architecture %q, want %s", got, runtime.GOARCH)
	}
	list := run(t, "dpkg-deb", "-c", deb)
	for _, want := range []string{"./usr/bin/vigil", "./usr/lib/systemd/system/vigil.service", "./usr/lib/tmpfiles.d/vigil.conf",
		"./etc/vigil/agent.yaml", "./usr/share/doc/vigil/copyright", "./usr/share/doc/vigil/changelog.gz"} {
		if !strings.Contains(list, " "+want+"\n") {
			t.Errorf("package lacks %s:\n%s", want, list)
		}
	}
	if strings.Contains(list, "/var/lib/vigil") {
		t.Errorf("package ships /var/lib/vigil: the unit's StateDirectory and tmpfiles make it, owned by vigil")
	}
	dir := t.TempDir()
	run(t, "dpkg-deb", "-e", deb, dir)
	if b, _ := os.ReadFile(filepath.Join(dir, "conffiles")); string(b) != "/etc/vigil/agent.yaml\n" {
		t.Errorf("conffiles %q, want /etc/vigil/agent.yaml", b)
	}
	root := t.TempDir()
	run(t, "dpkg-deb", "-x", deb, root)
	f, err := elf.Open(filepath.Join(root, "usr/bin/vigil"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("usr/bin/vigil asks for a dynamic loader: want a static binary (CGO_ENABLED=0)")
		}
	}
	if bi := run(t, "go", "version", "-m", filepath.Join(root, "usr/bin/vigil")); !strings.Contains(bi, "-trimpath=true") || !strings.Contains(bi, "CGO_ENABLED=0") {
		t.Errorf("usr/bin/vigil not built with -trimpath and CGO_ENABLED=0:\n%s", bi)
	}
	// Built by the release's recipe: vigil version names the commit, as the release's does.
	v := run(t, filepath.Join(root, "usr/bin/vigil"), "version")
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if !strings.HasPrefix(v, "vigil 0.0.0-test\n") || (err == nil && !strings.Contains(v, "commit "+strings.TrimSpace(string(head)))) {
		t.Errorf("usr/bin/vigil version says\n%s\nwant vigil 0.0.0-test and commit %s", v, head)
	}
}

// exitStatus holds the unit's restart policy to the agent's exit statuses: Restart=on-failure
// restarts an agent that failed at run time (exit 1: here, its DNS address taken), and
// RestartPreventExitStatus=2 keeps a mistake in the settings from restarting (an unknown field
// of agent.yaml: exit 2, the field named). The installed unit's command line runs as written,
// with flags after it that override the file, as a drop-in's ExecStart would.
func exitStatus(t *testing.T) {
	unit := readUnit(t, "/usr/lib/systemd/system/vigil.service")
	for k, want := range map[string]string{"Type": "notify", "Restart": "on-failure", "RestartPreventExitStatus": "2"} {
		if got := strings.Join(unit[k], ","); got != want {
			t.Errorf("%s=%s, want %s", k, got, want)
		}
	}
	argv := unit.command(t, "")
	u, err := user.Lookup("vigil")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	exit := func(args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], args...)...)
		cmd.Dir, cmd.Env = "/", unit.environment("/var/lib/vigil", "")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("%s %s still running after 90s, want it to fail:\n%s", strings.Join(argv, " "), strings.Join(args, " "), out)
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, string(out)
	}

	bad := "/etc/vigil/agent-typo.yaml"
	if err := os.WriteFile(bad, []byte("roles: [control]\ngossip_bnd: 127.0.0.1:7946\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(bad)
	code, out := exit("-config", bad)
	if want := "gossip_bnd: unknown field; did you mean gossip_bind?"; code != 2 || !strings.Contains(out, want) {
		t.Errorf("agent.yaml with an unknown field: exit %d, want 2 (no restart) and %q:\n%s", code, want, out)
	}

	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dns := taken.LocalAddr().String()
	code, out = exit("-dns", dns, "-http", freePort(t), "-api-addr", freePort(t), "-gossip-bind", freePort(t))
	if code == 0 || code == 2 || !strings.Contains(out, dns) {
		t.Errorf("DNS address %s taken: exit %d, want a failure other than 2 (restarted) that names the address:\n%s", dns, code, out)
	}
}

// repack returns deb rebuilt as version, with change applied to its extracted tree first
// (nil: none): a later release of the package, as far as dpkg can tell.
func repack(t *testing.T, deb, version string, change func(root string)) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	run(t, "dpkg-deb", "-R", deb, root)
	control := filepath.Join(root, "DEBIAN/control")
	b, err := os.ReadFile(control)
	if err != nil {
		t.Fatal(err)
	}
	b = regexp.MustCompile(`(?m)^Version: .*$`).ReplaceAll(b, []byte("Version: "+version))
	if err := os.WriteFile(control, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(root)
	}
	out := filepath.Join(dir, "vigil_"+version+".deb")
	run(t, "dpkg-deb", "--root-owner-group", "-Znone", "--build", root, out)
	return out
}

// upgradeKeepsConfig upgrades the installed package, whose agent.yaml the operator edited, to
// a later version twice: one that ships the same agent.yaml (dpkg keeps the edited file
// without a question) and one whose agent.yaml changed (with apt's unattended choice,
// --force-confold, dpkg keeps the edited file and puts the new one beside it as
// agent.yaml.dpkg-dist). The user, the state and its owner stay.
func upgradeKeepsConfig(t *testing.T, deb string) {
	const conf = "/etc/vigil/agent.yaml"
	edited, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if pristine, err := os.ReadFile("agent.yaml"); err != nil || bytes.Equal(pristine, edited) {
		t.Fatalf("%s is not edited: the upgrade would have nothing to keep", conf)
	}
	marker := filepath.Join("/var/lib/vigil", "upgrade-marker")
	if err := os.WriteFile(marker, []byte("state\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(marker)
	u1, _ := user.Lookup("vigil")

	same := repack(t, deb, "0.0.1+test", nil)
	out := dpkg(t, "-i", same)
	if strings.Contains(out, "Configuration file") {
		t.Errorf("dpkg asked about %s although the package's copy did not change:\n%s", conf, out)
	}
	if b, _ := os.ReadFile(conf); !bytes.Equal(b, edited) {
		t.Errorf("upgrade to 0.0.1+test replaced the edited %s", conf)
	}

	changed := repack(t, deb, "0.0.2+test", func(root string) {
		f, err := os.OpenFile(filepath.Join(root, "etc/vigil/agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("# a field the next release documents\n"); err != nil {
			t.Fatal(err)
		}
	})
	dpkg(t, "--force-confdef", "--force-confold", "-i", changed)
	if b, _ := os.ReadFile(conf); !bytes.Equal(b, edited) {
		t.Errorf("upgrade to 0.0.2+test (agent.yaml changed) replaced the edited %s", conf)
	}
	if b, err := os.ReadFile(conf + ".dpkg-dist"); err != nil || !strings.Contains(string(b), "a field the next release documents") {
		t.Errorf("no %s.dpkg-dist with the new release's file: %v", conf, err)
	}
	if v := run(t, "dpkg-query", "-W", "-f=${Version}", "vigil"); v != "0.0.2+test" {
		t.Errorf("installed version %q after the upgrades, want 0.0.2+test", v)
	}
	if u2, err := user.Lookup("vigil"); err != nil || u1 == nil || u2.Uid != u1.Uid {
		t.Errorf("the user vigil changed in the upgrade: %v, %v (%v)", u1, u2, err)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "state\n" {
		t.Errorf("the upgrade lost the state in /var/lib/vigil: %v", err)
	}
	checkInstalled(t)
}

// checkInstalled looks at what dpkg -i left: the user, the state directory, the conffile.
func checkInstalled(t *testing.T) {
	t.Helper()
	u, err := user.Lookup("vigil")
	if err != nil {
		t.Fatalf("postinst made no user vigil: %v", err)
	}
	st, err := os.Stat("/var/lib/vigil")
	if err != nil {
		t.Fatalf("no state directory: %v", err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if strconv.Itoa(int(sys.Uid)) != u.Uid || st.Mode().Perm() != 0o750 {
		t.Errorf("/var/lib/vigil: uid %d mode %v, want the user vigil (%s) and 0750", sys.Uid, st.Mode().Perm(), u.Uid)
	}
	if sh := run(t, "getent", "passwd", "vigil"); !strings.HasSuffix(strings.TrimSpace(sh), ":/usr/sbin/nologin") {
		t.Errorf("the user vigil can log in: %s", sh)
	}
	if c := run(t, "dpkg-query", "-W", "-f=${Conffiles}", "vigil"); !strings.Contains(c, "/etc/vigil/agent.yaml") {
		t.Errorf("dpkg does not hold /etc/vigil/agent.yaml as a conffile: %q", c)
	}
}

// removeAndPurge removes the package (the conffile and the state stay) and purges it
// (nothing stays), then deletes the user vigil when this test made it.
func removeAndPurge(t *testing.T, hadUser bool) {
	// The state the agent wrote stands for the operator's: remove keeps it, purge does not.
	if err := os.WriteFile("/etc/vigil/gossip.key.extra", []byte("x\n"), 0o600); err != nil {
		t.Error(err)
	}
	// The operator enabled the unit (systemctl enable works without a running systemd too):
	// remove disables it, leaving no link to a unit that is gone.
	const wants = "/etc/systemd/system/multi-user.target.wants/vigil.service"
	if out, err := exec.Command("systemctl", "--no-reload", "enable", "vigil.service").CombinedOutput(); err != nil || !exists(wants) {
		t.Errorf("systemctl enable vigil: %v, %s: %s", err, wants, out)
	}
	start := time.Now()
	dpkg(t, "-r", "vigil")
	t.Logf("dpkg -r took %v", time.Since(start).Round(10*time.Millisecond))
	for _, gone := range []string{"/usr/bin/vigil", "/usr/lib/systemd/system/vigil.service", "/usr/lib/tmpfiles.d/vigil.conf", wants} {
		if exists(gone) {
			t.Errorf("dpkg -r left %s", gone)
		}
	}
	for _, kept := range []string{"/etc/vigil/agent.yaml", "/var/lib/vigil"} {
		if !exists(kept) {
			t.Errorf("dpkg -r deleted %s: remove keeps the configuration and the node's state", kept)
		}
	}
	if _, status := installed(); status != "rc" {
		t.Errorf("after dpkg -r, status %q, want rc (removed, config-files kept)", status)
	}
	dpkg(t, "-P", "vigil")
	for _, gone := range []string{"/etc/vigil", "/var/lib/vigil"} {
		if exists(gone) {
			t.Errorf("dpkg -P left %s", gone)
		}
	}
	if ok, status := installed(); ok {
		t.Errorf("after dpkg -P, dpkg status %q", status)
	}
	if !hadUser {
		if out, err := exec.Command("deluser", "--system", "--quiet", "vigil").CombinedOutput(); err != nil {
			t.Errorf("deluser vigil: %v %s", err, out)
		}
		_ = exec.Command("delgroup", "--system", "--quiet", "vigil").Run()
	}
}

// checkUnit runs systemd-analyze verify on the installed unit, which loads it as systemd
// would: every directive known and its value parsed, the ExecStart binary present and
// executable, the units it names (network-online.target) found. It warns on stderr and
// still exits 0 for an unknown directive, so any output fails here; a unit with a typo shows
// that it does. systemd-analyze security rates its hardening, offline.
func checkUnit(t *testing.T) {
	unit := "/usr/lib/systemd/system/vigil.service"
	verify := func(path string) (string, error) {
		out, err := exec.Command("systemd-analyze", "verify", "--man=no", "--generators=false", path).CombinedOutput()
		return string(out), err
	}
	if out, err := verify(unit); err != nil || out != "" {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(t.TempDir(), "vigil.service")
	if err := os.WriteFile(typo, bytes.Replace(b, []byte("ProtectHome="), []byte("ProtectHom="), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := verify(typo); !strings.Contains(out, "Unknown key") {
		t.Errorf("systemd-analyze verify took a unit with a misspelt directive without a word: %q", out)
	}
	out, _ := exec.Command("systemd-analyze", "security", "--offline=true", unit).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for vigil.service: ([0-9.]+) (\w+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("systemd-analyze security: no overall level:\n%s", out)
	}
	t.Logf("systemd-analyze security: exposure %s %s", m[1], m[2])
	if m[2] != "OK" && m[2] != "SAFE" {
		t.Errorf("exposure %s %s, want OK or SAFE (the hardening of the unit is lost):\n%s", m[1], m[2], out)
	}
}

// unitFile is the [Service] section of a unit: every key's values in order.
type unitFile map[string][]string

func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			u[k] = append(u[k], v)
		}
	}
	return u
}

// command is the unit's ExecStart, split as systemd splits it (the unit quotes nothing), with
// root put before its absolute paths.
func (u unitFile) command(t *testing.T, root string) []string {
	t.Helper()
	if len(u["ExecStart"]) != 1 {
		t.Fatalf("ExecStart %q: want one", u["ExecStart"])
	}
	words := strings.Fields(u["ExecStart"][0])
	for i, w := range words {
		if strings.HasPrefix(w, "/") {
			words[i] = root + w
		}
	}
	return words
}

// environment is the unit's Environment= assignments, and what systemd adds for this unit:
// its state directory and the notify socket.
func (u unitFile) environment(stateDir, notify string) []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
		"STATE_DIRECTORY=" + stateDir, "NOTIFY_SOCKET=" + notify}
	for _, e := range u["Environment"] {
		env = append(env, strings.Fields(e)...)
	}
	return env
}

// editAgentYAML edits an agent.yaml as an operator does: each field's line, commented out or
// not, becomes "field: value"; a field the file does not mention fails the test (the
// packaged example should show it).
func editAgentYAML(t *testing.T, path string, fields [][2]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, f := range fields {
		re := regexp.MustCompile(`(?m)^#?` + regexp.QuoteMeta(f[0]) + `:.*$`)
		loc := re.FindStringIndex(text)
		if loc == nil {
			t.Fatalf("%s does not mention %s", path, f[0])
		}
		text = text[:loc[0]] + f[0] + ": " + f[1] + text[loc[1]:]
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSecret writes a file the agent reads: root's, readable by the group vigil.
func writeSecret(t *testing.T, path, content string, gid int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 0, gid); err != nil {
		t.Fatal(err)
	}
}

func gossipKey() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k) + "\n"
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// privilegedDNSAddr returns a loopback address, port 53, that nothing here listens on: the
// agent binds it with the unit's one capability.
func privilegedDNSAddr(t *testing.T) string {
	t.Helper()
	for range 20 {
		b := make([]byte, 2)
		_, _ = rand.Read(b)
		addr := fmt.Sprintf("127.53.%d.%d:53", b[0], max(b[1], 1))
		u, err1 := net.ListenPacket("udp", addr)
		l, err2 := net.Listen("tcp", addr)
		if err1 == nil && err2 == nil {
			u.Close()
			l.Close()
			return addr
		}
		if u != nil {
			u.Close()
		}
		if l != nil {
			l.Close()
		}
	}
	t.Fatal("no free loopback address on port 53")
	return ""
}

// agentProc is a vigil agent started as the unit starts it.
type agentProc struct {
	cmd  *exec.Cmd
	log  syncbuf.Buffer
	done chan error
}

// startUnit runs the unit's command line in /, with the unit's environment, as cred (nil: as
// root), with the unit's ambient capability.
func startUnit(t *testing.T, argv, env []string, cred *syscall.Credential) *agentProc {
	t.Helper()
	p := &agentProc{done: make(chan error, 1)}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir, p.cmd.Env = "/", env
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if cred != nil {
		const capNetBindService = 10
		p.cmd.SysProcAttr.AmbientCaps = []uintptr{capNetBindService}
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM, as systemctl stop does, and waits; it reports a failed exit.
func (p *agentProc) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("agent exit: %v\n%s", err, p.output())
		}
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("agent did not stop within the unit's TimeoutStopSec (60s)\n%s", p.output())
	}
}

func (p *agentProc) output() string {
	return p.log.String()
}

// waitFor asks ok every 200ms until it says true, or fails after within.
func waitFor(t *testing.T, within time.Duration, what string, ok func() bool, p *agentProc) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			out := ""
			if p != nil {
				out = p.output()
			}
			t.Fatalf("no %s within %v\n%s", what, within, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// applyDoc puts doc to the voter's API until it is taken, asking again while the voter is not
// up or not ready (no answer, 5xx); a refusal fails the test.
func applyDoc(t *testing.T, api, doc string, p *agentProc) {
	t.Helper()
	waitFor(t, 60*time.Second, "document taken by the voter", func() bool {
		code, body, err := apply(api, doc)
		if err == nil && code != 200 && code < 500 {
			t.Fatalf("the voter refused the document: HTTP %d: %s", code, body)
		}
		return err == nil && code == 200
	}, p)
}

// apply puts a configuration document to a voter's API with the test's token.
func apply(api, doc string) (int, string, error) {
	req, err := http.NewRequest("PUT", "http://"+api+"/v1/document", strings.NewReader(doc))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// dig asks server (host:port) for name's A records with dig, the independent client.
func dig(server, name string) string {
	host, port, _ := net.SplitHostPort(server)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "dig", "+short", "+time=1", "+tries=1", "@"+host, "-p", port, name, "A").Output()
	return strings.TrimSpace(string(out))
}

// readyz returns the HTTP status of GET /readyz at addr.
func readyz(addr string) int {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// failoverDoc is a document of the regions whose record www.pkg.vigil.test fails over from
// a primary whose check probes a closed port to a secondary whose check probes the voter's
// API: the answer 198.51.100.7 says that checkers found the primary down.
func failoverDoc(regions []string, api, closed string) string {
	_, apiPort, _ := net.SplitHostPort(api)
	_, closedPort, _ := net.SplitHostPort(closed)
	return `{"regions": ["` + strings.Join(regions, `", "`) + `"],
	"checks": [
		{"id": "api", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": ` + apiPort + `}, "interval": "1s", "timeout": "500ms", "allow_fewer_regions": true},
		{"id": "closed", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": ` + closedPort + `}, "interval": "1s", "timeout": "500ms", "allow_fewer_regions": true}],
	"zones": [{"name": "pkg.vigil.test", "record_sets": [{"name": "www", "type": "A", "policy": "failover", "records": [
		{"value": "192.0.2.7", "health_check": "closed", "role": "primary"},
		{"value": "198.51.100.7", "health_check": "api", "role": "secondary"}]}]}]}`
}

// runInstalled runs the installed unit's ExecStart, as the user vigil with the unit's
// capability and environment, with /etc/vigil/agent.yaml edited into a voter that is also
// a checker and location: systemd is told the node is ready only once /readyz says so, the
// node answers DNS on port 53 from the document applied, and it says STOPPING=1 at the end.
func runInstalled(t *testing.T) {
	u, err := user.Lookup("vigil")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	unit := readUnit(t, "/usr/lib/systemd/system/vigil.service")
	if got := strings.Join(unit["User"], ","); got != "vigil" {
		t.Errorf("unit runs as %q, want vigil", got)
	}
	if got := strings.Join(unit["StateDirectory"], ","); got != "vigil" {
		t.Errorf("StateDirectory %q, want vigil", got)
	}
	writeSecret(t, "/etc/vigil/token", testToken+"\n", gid)
	writeSecret(t, "/etc/vigil/gossip.key", gossipKey(), gid)
	api, httpAddr, raft, gossip, closed := freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)
	dnsAddr := privilegedDNSAddr(t)
	editAgentYAML(t, "/etc/vigil/agent.yaml", [][2]string{
		{"roles", "[control, checker, location]"}, {"id", "pkg-solo"}, {"region", "eu-west"},
		{"bootstrap", "true"}, {"raft_addr", raft}, {"api_addr", api}, {"token_file", "token"},
		{"gossip_bind", gossip}, {"gossip_key_file", "gossip.key"},
		{"dns", dnsAddr}, {"http", httpAddr}, {"allow_loopback_probes", "true"},
	})

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	notify := "@vigil-pkg-notify-" + hex.EncodeToString(b)
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	messages := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := sock.Read(buf)
			if err != nil {
				close(messages)
				return
			}
			messages <- string(buf[:n])
		}
	}()

	p := startUnit(t, unit.command(t, ""), unit.environment("/var/lib/vigil", notify),
		&syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)})
	// Not ready at the start (no raft leader, no configuration yet): a status says why. The
	// first voter of a network becomes ready within seconds with the empty configuration; the
	// READY=1 below is held to /readyz.
	select {
	case m := <-messages:
		if !strings.HasPrefix(m, "STATUS=not ready: ") {
			t.Fatalf("first notification %q, want the reason it is not ready", m)
		}
		t.Logf("notify: %s", m)
	case <-time.After(60 * time.Second):
		t.Fatalf("no notification within 60s\n%s", p.output())
	}
	applyDoc(t, api, failoverDoc([]string{"eu-west"}, api, closed), p)
	deadline := time.After(90 * time.Second)
	for ready := false; !ready; {
		select {
		case m := <-messages:
			t.Logf("notify: %s", m)
			if strings.HasPrefix(m, "READY=1") {
				ready = true
				if code := readyz(httpAddr); code != 200 {
					t.Errorf("READY=1 sent while /readyz says %d", code)
				}
			}
		case <-deadline:
			t.Fatalf("no READY=1 within 90s of the document\n%s", p.output())
		}
	}
	waitFor(t, 60*time.Second, "failover answer on port 53", func() bool {
		return dig(dnsAddr, "www.pkg.vigil.test.") == "198.51.100.7"
	}, p)
	if data, err := os.ReadDir("/var/lib/vigil"); err != nil || len(data) == 0 {
		t.Errorf("the agent wrote nothing to /var/lib/vigil (data_dir): %v", err)
	}
	p.stop(t)
	for {
		select {
		case m := <-messages:
			if m == "STOPPING=1" {
				return
			}
		case <-time.After(5 * time.Second):
			t.Errorf("no STOPPING=1 at the end\n%s", p.output())
			return
		}
	}
}

// threeNodes builds a network of three nodes, each from the package's files extracted into a
// root of its own (etc/vigil/agent.yaml, usr/bin/vigil, var/lib/vigil), on loopback: a voter,
// and a checker and location in each of two regions. Each node runs the unit's command line
// under its root, with its agent.yaml edited; both locations answer from the checkers' quorum.
func threeNodes(t *testing.T, deb string) {
	unitPath := "/usr/lib/systemd/system/vigil.service"
	key := gossipKey()
	api, raft, euGossip, closed := freePort(t), freePort(t), freePort(t), freePort(t)
	type node struct {
		name   string
		fields [][2]string
		dns    string
		http   string
	}
	// A voter alone gossips with nobody: the checkers and locations make the pool, the second
	// joining the first.
	nodes := []*node{
		{name: "voter", fields: [][2]string{{"roles", "[control]"}, {"bootstrap", "true"}, {"raft_addr", raft},
			{"api_addr", api}, {"token_file", "token"}}},
		{name: "eu", fields: [][2]string{{"roles", "[checker, location]"}, {"region", "eu-west"},
			{"control", "[http://" + api + "]"}, {"read_token_file", "token"},
			{"gossip_bind", euGossip}, {"allow_loopback_probes", "true"}}},
		{name: "us", fields: [][2]string{{"roles", "[checker, location]"}, {"region", "us-east"},
			{"control", "[http://" + api + "]"}, {"read_token_file", "token"}, {"join", "[" + euGossip + "]"},
			{"gossip_bind", freePort(t)}, {"allow_loopback_probes", "true"}}},
	}
	procs := make([]*agentProc, len(nodes))
	for i, n := range nodes {
		root := t.TempDir()
		run(t, "dpkg-deb", "-x", deb, root)
		if err := os.MkdirAll(filepath.Join(root, "var/lib/vigil"), 0o750); err != nil {
			t.Fatal(err)
		}
		n.dns, n.http = freePort(t), freePort(t)
		etc := filepath.Join(root, "etc/vigil")
		writeSecret(t, filepath.Join(etc, "token"), testToken+"\n", 0)
		writeSecret(t, filepath.Join(etc, "gossip.key"), key, 0)
		editAgentYAML(t, filepath.Join(etc, "agent.yaml"), append(n.fields, [][2]string{
			{"id", "pkg-" + n.name}, {"data_dir", filepath.Join(root, "var/lib/vigil")},
			{"gossip_key_file", "gossip.key"}, {"dns", n.dns}, {"http", n.http},
		}...))
		unit := readUnit(t, filepath.Join(root, unitPath))
		procs[i] = startUnit(t, unit.command(t, root), unit.environment(filepath.Join(root, "var/lib/vigil"), ""), nil)
	}
	applyDoc(t, api, failoverDoc([]string{"eu-west", "us-east"}, api, closed), procs[0])
	for i, n := range nodes[1:] {
		waitFor(t, 90*time.Second, "failover answer from location "+n.name, func() bool {
			return dig(n.dns, "www.pkg.vigil.test.") == "198.51.100.7"
		}, procs[i+1])
		waitFor(t, 60*time.Second, "/readyz 200 at "+n.name, func() bool { return readyz(n.http) == 200 }, procs[i+1])
	}
}
