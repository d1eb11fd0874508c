package dev

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// compose runs the compose demo of one test: a unique project name, its own image tag and
// free host ports.
type compose struct {
	t       *testing.T
	cmd     []string // "docker compose" or "docker-compose"
	project string
	env     []string
	ports   map[string]int
}

func (c *compose) run(args ...string) (string, error) {
	c.t.Helper()
	full := append(slices.Clone(c.cmd[1:]), append([]string{"-p", c.project, "-f", "../../docker-compose.yml"}, args...)...)
	cmd := exec.Command(c.cmd[0], full...)
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func docker(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	return string(out), err
}

// composeCommand returns the compose command this machine has, or nil.
func composeCommand() []string {
	if _, err := docker("compose", "version"); err == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	return nil
}

// TestComposeWalkthrough builds the image once, starts the compose demo without the
// observability profile on networks and host ports of its own, and runs the walkthrough of
// the demo as docs/demo.md writes it, observing only
// through the host's published ports: failover, sa-east cut off (its location answers only
// its own address, the others drop it), heal, a non-transitive cut, last resort, a voter
// killed. Whatever happens, it removes its containers, networks, volumes and image.
func TestComposeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("the compose demo takes a few minutes; skipped with -short")
	}
	if _, err := docker("info"); err != nil {
		t.Skip("no Docker engine here (docker info failed): the compose demo is not tested; install docker.io to run it")
	}
	cmdline := composeCommand()
	if cmdline == nil {
		t.Skip("neither docker compose nor docker-compose is installed: the compose demo is not tested")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun: the demo's routers cannot run here")
	}
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("no dig (Debian: dnsutils): the walkthrough cannot be run")
	}
	steps := walkthroughSteps(t, "docs/demo.md", "The compose demo")
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	image := "vigil-test:" + id
	bin := buildImage(t, image)

	c := &compose{t: t, cmd: cmdline, project: "vigiltest" + id, ports: map[string]int{}}
	for _, v := range []string{"VIGIL_CONTROL_PORT", "VIGIL_DNS_US_EAST", "VIGIL_DNS_EU_WEST", "VIGIL_DNS_SA_EAST",
		"VIGIL_HTTP_US_EAST", "VIGIL_HTTP_EU_WEST", "VIGIL_HTTP_SA_EAST",
		"VIGIL_TARGET_US_EAST", "VIGIL_TARGET_EU_WEST", "VIGIL_TARGET_SA_EAST"} {
		c.ports[v] = freeUDPAndTCPPort(t)
		c.env = append(c.env, v+"="+strconv.Itoa(c.ports[v]))
	}
	c.env = append(c.env, "VIGIL_IMAGE="+image, "VIGIL_NET="+freeNet(t))
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.run("logs", "--no-color", "--tail", "20")
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := c.run("down", "-v", "--remove-orphans", "-t", "2"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
		for _, kind := range []string{"ps -a", "network ls", "volume ls"} {
			out, _ := docker(append(strings.Fields(kind), "-q", "--filter", "label=com.docker.compose.project="+c.project)...)
			if strings.TrimSpace(out) != "" {
				t.Errorf("docker %s: left behind after down -v:\n%s", kind, out)
			}
		}
	})
	start := time.Now()
	if out, err := c.run("up", "-d"); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	t.Logf("compose up: %v", time.Since(start).Round(100*time.Millisecond))

	// The walkthrough's commands, on this test's project, ports and binary.
	var pairs []string
	for v, def := range map[string]string{"VIGIL_DNS_US_EAST": "5301", "VIGIL_DNS_EU_WEST": "5302", "VIGIL_DNS_SA_EAST": "5303"} {
		pairs = append(pairs, "-p "+def+" ", "-p "+strconv.Itoa(c.ports[v])+" ")
	}
	for v, def := range map[string]string{"VIGIL_CONTROL_PORT": "7700", "VIGIL_HTTP_US_EAST": "7701", "VIGIL_HTTP_EU_WEST": "7702", "VIGIL_HTTP_SA_EAST": "7703"} {
		pairs = append(pairs, "127.0.0.1:"+def, "127.0.0.1:"+strconv.Itoa(c.ports[v]))
	}
	pairs = append(pairs, "deploy/compose/fault.sh ", "sh deploy/compose/fault.sh -p "+c.project+" ", "bin/vigil ", bin+" ")
	// The first two steps wait for the network to settle: images start, voters elect,
	// checkers probe and gossip, and every location hears every checker (a cut made before
	// sa-east's location heard a far checker would leave it out of the list the walkthrough shows).
	runSteps(t, "../..", c.env, steps[:2], strings.NewReplacer(pairs...), 150*time.Second)
	runSteps(t, "../..", c.env, steps[2:], strings.NewReplacer(pairs...), 45*time.Second)
	t.Logf("walkthrough done %v after compose up", time.Since(start).Round(time.Second))
}

// freeNet returns the first two octets of a 10.x.0.0/16 that no Docker network and no route
// of the host uses, for the demo's VIGIL_NET.
func freeNet(t *testing.T) string {
	t.Helper()
	used, _ := docker("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", "bridge")
	if ids, err := docker("network", "ls", "-q"); err == nil && strings.TrimSpace(ids) != "" {
		out, _ := docker(append([]string{"network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}"}, strings.Fields(ids)...)...)
		used += out
	}
	if routes, err := exec.Command("ip", "-4", "route").Output(); err == nil {
		used += string(routes)
	}
	b := make([]byte, 1)
	for range 50 {
		_, _ = rand.Read(b)
		n := "10." + strconv.Itoa(100+int(b[0])%150)
		if !strings.Contains(used, n+".") {
			return n
		}
	}
	t.Fatal("no free 10.x.0.0/16 for the demo's networks")
	return ""
}

// buildImage builds the static binary and the image tagged tag from the repository's
// Dockerfile, in a context of its own, and returns the binary's path; the image is removed
// at the end of the test.
func buildImage(t *testing.T, tag string) string {
	t.Helper()
	ctxDir := t.TempDir()
	for _, d := range []string{"bin", "build/data"} {
		if err := os.MkdirAll(filepath.Join(ctxDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(ctxDir, "bin", "vigil"), "../../cmd/vigil")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for src, dst := range map[string]string{
		"/etc/ssl/certs/ca-certificates.crt": "build/ca-certificates.crt",
		"../../Dockerfile":                   "Dockerfile",
		"../../.dockerignore":                ".dockerignore",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(ctxDir, dst), string(b))
	}
	if out, err := docker("build", "-q", "-t", tag, ctxDir); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = docker("rmi", "-f", tag) })
	return filepath.Join(ctxDir, "bin", "vigil")
}

// freeUDPAndTCPPort returns a loopback port free for both TCP and UDP, as a location's
// published DNS port must be. It is drawn below Linux's ephemeral range (32768 and up by
// default), where no test of another package running meanwhile gets a port by binding port
// 0: such a test could take a port chosen here before compose binds it.
func freeUDPAndTCPPort(t *testing.T) int {
	t.Helper()
	for range 200 {
		p := 20000 + mrand.IntN(12000)
		tl, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		u, err := netListenUDP(p)
		tl.Close()
		if err == nil {
			u.Close()
			return p
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return 0
}

func get(u string) (string, error) {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, io.LimitReader(resp.Body, 4<<20))
	return b.String(), err
}

func netListenUDP(port int) (io.Closer, error) {
	return net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
}
