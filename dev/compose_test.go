package dev

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	full := append(slices.Clone(c.cmd[1:]), append([]string{"-p", c.project, "-f", "../docker-compose.yml"}, args...)...)
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

// TestComposeDemo builds the image, starts the compose demo without the observability
// profile, and checks that every location answers, that a stopped target drops out of the
// answers, that a location disconnected from the network fails open and says so when it
// comes back, and that `down -v` leaves nothing behind.
func TestComposeDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the compose demo takes a minute or two; skipped with -short")
	}
	if _, err := docker("info"); err != nil {
		t.Skip("no Docker engine here (docker info failed): the compose demo is not tested")
	}
	cmdline := composeCommand()
	if cmdline == nil {
		t.Skip("neither docker compose nor docker-compose is installed")
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	image := "vigil-test:" + id
	buildImage(t, image)

	c := &compose{t: t, cmd: cmdline, project: "vigiltest" + id, ports: map[string]int{}}
	for _, v := range []string{"VIGIL_CONTROL_PORT", "VIGIL_DNS_US_EAST", "VIGIL_DNS_EU_WEST", "VIGIL_DNS_SA_EAST",
		"VIGIL_HTTP_US_EAST", "VIGIL_HTTP_EU_WEST", "VIGIL_HTTP_SA_EAST",
		"VIGIL_TARGET_US_EAST", "VIGIL_TARGET_EU_WEST", "VIGIL_TARGET_SA_EAST"} {
		c.ports[v] = freeUDPAndTCPPort(t)
		c.env = append(c.env, v+"="+strconv.Itoa(c.ports[v]))
	}
	c.env = append(c.env, "VIGIL_IMAGE="+image)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.run("logs", "--no-color", "--tail", "30")
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
	if out, err := c.run("up", "-d"); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}

	const usEast, euWest, saEast = "192.0.2.1", "198.51.100.1", "203.0.113.1"
	dnsOf := map[string]string{
		"us-east": "127.0.0.1:" + strconv.Itoa(c.ports["VIGIL_DNS_US_EAST"]),
		"eu-west": "127.0.0.1:" + strconv.Itoa(c.ports["VIGIL_DNS_EU_WEST"]),
		"sa-east": "127.0.0.1:" + strconv.Itoa(c.ports["VIGIL_DNS_SA_EAST"]),
	}
	every := func(want ...string) func() (bool, string) {
		return func() (bool, string) {
			for _, r := range []string{"us-east", "eu-west", "sa-east"} {
				got, err := answers(dnsOf[r], "all.demo.vigil.test")
				if err != nil || !slices.Equal(got, want) {
					return false, fmt.Sprintf("%s answers %v (%v), want %v", r, got, err, want)
				}
			}
			return true, ""
		}
	}
	eventually(t, 120*time.Second, "every location answers every target", every(usEast, euWest, saEast))

	container := func(service string) string {
		out, err := c.run("ps", "-q", service)
		if err != nil || strings.TrimSpace(out) == "" {
			t.Fatalf("container of %s: %v %s", service, err, out)
		}
		return strings.TrimSpace(out)
	}
	if out, err := docker("stop", "-t", "1", container("target-us-east")); err != nil {
		t.Fatalf("docker stop: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, "the stopped target drops out everywhere", every(euWest, saEast))

	// A real cut: eu-west's location leaves the demo network for longer than its freshness
	// window plus its hold, so it knows nothing fresh and fails open (unknown, served healthy).
	// The location is out of reach during the cut, and gossip brings its reports back fresh as
	// soon as it is connected again (its peers relay heartbeats to it before they see it
	// alive): what it did meanwhile is in its counter of verdict changes to unknown.
	metricsURL := "http://127.0.0.1:" + strconv.Itoa(c.ports["VIGIL_HTTP_EU_WEST"]) + "/metrics"
	unknownRE := regexp.MustCompile(`(?m)^vigil_location_verdict_changes_total\{check="web-us-east",state="unknown"\} ([0-9.]+)$`)
	wentUnknown := func() float64 {
		body, err := get(metricsURL)
		if err != nil {
			return -1
		}
		if m := unknownRE.FindStringSubmatch(body); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			return v
		}
		return 0
	}
	before := wentUnknown()
	network := c.project + "_vigil"
	loc := container("location-eu-west")
	if out, err := docker("network", "disconnect", network, loc); err != nil {
		t.Fatalf("docker network disconnect: %v\n%s", err, out)
	}
	time.Sleep(20 * time.Second)
	if out, err := docker("network", "connect", network, loc); err != nil {
		t.Fatalf("docker network connect: %v\n%s", err, out)
	}
	var after float64
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(100 * time.Millisecond) {
		if after = wentUnknown(); after >= 0 {
			break
		}
	}
	if before < 0 || after <= before {
		t.Errorf("eu-west's location: web-us-east went unknown %v times before the cut and %v after; want more after (it heard nothing fresh for longer than freshness plus hold)", before, after)
	}
	eventually(t, 60*time.Second, "eu-west agrees again after the cut", every(euWest, saEast))
}

// buildImage builds the static binary and the image tagged tag from the repository's
// Dockerfile, in a context of its own; the image is removed at the end of the test.
func buildImage(t *testing.T, tag string) {
	t.Helper()
	ctxDir := t.TempDir()
	for _, d := range []string{"bin", "build/data"} {
		if err := os.MkdirAll(filepath.Join(ctxDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(ctxDir, "bin", "vigil"), "../cmd/vigil")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for src, dst := range map[string]string{
		"/etc/ssl/certs/ca-certificates.crt": "build/ca-certificates.crt",
		"../Dockerfile":                      "Dockerfile",
		"../.dockerignore":                   ".dockerignore",
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
}

// freeUDPAndTCPPort returns a loopback port free for both TCP and UDP, as a location's
// published DNS port must be.
func freeUDPAndTCPPort(t *testing.T) int {
	t.Helper()
	for range 50 {
		p := freePort(t)
		if u, err := netListenUDP(p); err == nil {
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
