package chartcheck

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/yaml"
)

const chartDir = "../vigil"

// valueSets are the values the chart is checked with: its defaults, the three-region example
// as shipped, and one that brings its own Secrets and mutual TLS.
var valueSets = []struct {
	name string
	file string
	set  map[string]any
}{
	{name: "default"},
	{name: "three-regions", file: "values-three-regions.yaml"},
	{name: "tls", set: map[string]any{
		"secrets":        map[string]any{"existingSecret": "vigil-own", "dnssec": true},
		"tls":            map[string]any{"existingSecret": "vigil-tls", "requireClientCert": true},
		"voters":         map[string]any{"replicas": 5},
		"serviceMonitor": map[string]any{"enabled": true},
		"externaldns":    map[string]any{"enabled": true, "zones": []any{"a.example.", "b.example."}},
	}},
}

func values(t *testing.T, file string, set map[string]any) map[string]any {
	t.Helper()
	if file == "" {
		return set
	}
	data, err := os.ReadFile(filepath.Join(chartDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.UnmarshalStrict(data, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// TestLint runs helm lint's rules over the chart: any warning or error fails.
func TestLint(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			res := lint.RunAll(chartDir, values(t, vs.file, vs.set), "vigil")
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				} else {
					t.Logf("helm lint: %s", m)
				}
			}
		})
	}
}

// render returns the chart's manifests for a release "vigil" in namespace "vigil", by file.
func render(t *testing.T, vals map[string]any) map[string]string {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	rv, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: "vigil", Namespace: "vigil", Revision: 1, IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return out
}

// scheme knows every kind the chart may render; a kind it does not know fails the decoding.
func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, rbacv1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decodeAll decodes every object of the rendered files strictly: unknown and duplicate
// fields fail, as kubectl apply --validate=strict would refuse them.
func decodeAll(t *testing.T, files map[string]string) []runtime.Object {
	t.Helper()
	dec := strictDecoder(t)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var objs []runtime.Object
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		for i, doc := range docSep.Split(files[name], -1) {
			if isEmptyYAML(doc) {
				continue
			}
			obj, gvk, err := dec.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Errorf("%s document %d: %v\n%s", name, i, err, doc)
				continue
			}
			if gvk.Kind == "" {
				t.Errorf("%s document %d: no kind", name, i)
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

// strictDecoder decodes YAML objects of the scheme's kinds, refusing unknown and duplicate fields.
func strictDecoder(t *testing.T) runtime.Decoder {
	s := scheme(t)
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s, kjson.SerializerOptions{Yaml: true, Strict: true})
}

// TestStrictDecoding shows that the decoding TestRender relies on refuses what the API server
// would: the voters' StatefulSet as rendered decodes, and with a field misspelt, put at the
// wrong level or given twice it does not.
func TestStrictDecoding(t *testing.T) {
	var sts string
	for _, doc := range docSep.Split(render(t, nil)["vigil/templates/voters.yaml"], -1) {
		if strings.Contains(doc, "\nkind: StatefulSet\n") {
			sts = doc
		}
	}
	if !strings.Contains(sts, "\n  serviceName: ") || !strings.Contains(sts, "\n  replicas: ") {
		t.Fatalf("no voter StatefulSet with serviceName and replicas rendered:\n%s", sts)
	}
	dec := strictDecoder(t)
	if _, _, err := dec.Decode([]byte(sts), nil, nil); err != nil {
		t.Fatalf("the StatefulSet as rendered: %v", err)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"misspelt", "\n  serviceName: ", "\n  serviceNme: ", `unknown field "spec.serviceNme"`},
		{"wrong level", "\n  replicas: ", "\n  hostNetwork: true\n  replicas: ", `unknown field "spec.hostNetwork"`},
		{"twice", "\n  replicas: ", "\n  replicas: 1\n  replicas: ", `key "replicas" already set`},
	} {
		_, _, err := dec.Decode([]byte(strings.Replace(sts, c.old, c.new, 1)), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: decoding says %v, want %s", c.name, err, c.want)
		}
	}
}

func isEmptyYAML(doc string) bool {
	for line := range strings.Lines(doc) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// workload is the pod template of a StatefulSet, Deployment or DaemonSet.
type workload struct {
	kind, name string
	selector   map[string]string
	pod        corev1.PodTemplateSpec
	claims     []string
}

func workloads(objs []runtime.Object) []workload {
	var out []workload
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.StatefulSet:
			var claims []string
			for _, c := range w.Spec.VolumeClaimTemplates {
				claims = append(claims, c.Name)
			}
			out = append(out, workload{"StatefulSet", w.Name, w.Spec.Selector.MatchLabels, w.Spec.Template, claims})
		case *appsv1.Deployment:
			out = append(out, workload{"Deployment", w.Name, w.Spec.Selector.MatchLabels, w.Spec.Template, nil})
		case *appsv1.DaemonSet:
			out = append(out, workload{"DaemonSet", w.Name, w.Spec.Selector.MatchLabels, w.Spec.Template, nil})
		}
	}
	return out
}

// TestRender renders the chart for every value set, decodes every object strictly and checks
// that the objects fit together.
func TestRender(t *testing.T) {
	bin := vigilBinary(t)
	agentFlags, edFlags := vigilFlags(t, bin, "agent"), vigilFlags(t, bin, "externaldns")
	realEDFlags := externalDNSFlags(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			vals := values(t, vs.file, vs.set)
			objs := decodeAll(t, render(t, vals))
			ws := workloads(objs)
			checkWorkloads(t, ws, agentFlags, edFlags)
			checkExternalDNS(t, ws, realEDFlags)
			checkServices(t, objs, ws)
			checkPDB(t, objs, ws)
			checkSecret(t, objs, vs.set == nil)
			checkShape(t, vs.name, objs, ws)
		})
	}
}

// checkWorkloads: selectors select their own pods, mounts name volumes, and every vigil
// argument is a flag of the vigil command it runs.
func checkWorkloads(t *testing.T, ws []workload, agentFlags, edFlags map[string]bool) {
	for _, w := range ws {
		if len(w.selector) == 0 || !labels.SelectorFromSet(w.selector).Matches(labels.Set(w.pod.Labels)) {
			t.Errorf("%s %s: selector %v does not select its pods %v", w.kind, w.name, w.selector, w.pod.Labels)
		}
		vols := slices.Clone(w.claims)
		for _, v := range w.pod.Spec.Volumes {
			vols = append(vols, v.Name)
		}
		for _, c := range w.pod.Spec.Containers {
			for _, m := range c.VolumeMounts {
				if !slices.Contains(vols, m.Name) {
					t.Errorf("%s %s container %s: mount %q names no volume (%v)", w.kind, w.name, c.Name, m.Name, vols)
				}
			}
			if !strings.Contains(c.Image, "vigil") || len(c.Args) == 0 {
				continue
			}
			flags := map[string]map[string]bool{"agent": agentFlags, "externaldns": edFlags}[c.Args[0]]
			if flags == nil {
				t.Errorf("%s %s: vigil command %q: the chart runs only agent and externaldns", w.kind, w.name, c.Args[0])
				continue
			}
			for _, a := range c.Args[1:] {
				name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
				if !strings.HasPrefix(a, "-") || !flags[name] {
					t.Errorf("%s %s: argument %q is not a flag of vigil %s", w.kind, w.name, a, c.Args[0])
				}
			}
			if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("%s %s: container %s has a writable root file system", w.kind, w.name, c.Name)
			}
		}
	}
}

// checkServices: every Service selects the pods of some workload and its target ports are
// named ports of those pods, with the same protocol.
func checkServices(t *testing.T, objs []runtime.Object, ws []workload) {
	for _, o := range objs {
		svc, ok := o.(*corev1.Service)
		if !ok {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		matched := 0
		for _, w := range ws {
			if !sel.Matches(labels.Set(w.pod.Labels)) {
				continue
			}
			matched++
			for _, p := range svc.Spec.Ports {
				if !hasPort(w.pod.Spec, p.TargetPort.String(), p.Protocol) {
					t.Errorf("Service %s port %s: %s %s has no %s port named %q", svc.Name, p.Name, w.kind, w.name, p.Protocol, p.TargetPort.String())
				}
			}
		}
		if matched == 0 {
			t.Errorf("Service %s: selector %v selects no pod of the chart", svc.Name, svc.Spec.Selector)
		}
	}
}

func hasPort(spec corev1.PodSpec, name string, proto corev1.Protocol) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name && p.Protocol == proto {
				return true
			}
		}
	}
	return false
}

// checkPDB: the voters' budget selects the voters and leaves a majority.
func checkPDB(t *testing.T, objs []runtime.Object, ws []workload) {
	var sts *appsv1.StatefulSet
	for _, o := range objs {
		if s, ok := o.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	if sts == nil {
		t.Fatal("no voter StatefulSet")
	}
	found := false
	for _, o := range objs {
		pdb, ok := o.(*policyv1.PodDisruptionBudget)
		if !ok {
			continue
		}
		found = true
		sel := labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels)
		if !sel.Matches(labels.Set(sts.Spec.Template.Labels)) {
			t.Errorf("PodDisruptionBudget %s does not select the voters", pdb.Name)
		}
		replicas := int(*sts.Spec.Replicas)
		if mu := pdb.Spec.MaxUnavailable.IntValue(); mu < 1 || replicas-mu <= replicas/2 {
			t.Errorf("PodDisruptionBudget %s: maxUnavailable %d of %d voters loses the majority", pdb.Name, mu, replicas)
		}
	}
	if !found {
		t.Error("no PodDisruptionBudget")
	}
}

// checkSecret: a generated Secret holds keys of the sizes the agent reads.
func checkSecret(t *testing.T, objs []runtime.Object, generated bool) {
	n := 0
	for _, o := range objs {
		s, ok := o.(*corev1.Secret)
		if !ok {
			continue
		}
		n++
		for _, k := range []string{"gossip.key", "raft-secret", "dnssec.secret"} {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(s.Data[k])))
			if err != nil || len(raw) != 32 {
				t.Errorf("Secret %s key %s: %q is not base64 of 32 bytes (%v)", s.Name, k, s.Data[k], err)
			}
		}
		for _, k := range []string{"token", "read-token"} {
			if len(strings.TrimSpace(string(s.Data[k]))) < 32 {
				t.Errorf("Secret %s key %s: a token of %d characters", s.Name, k, len(s.Data[k]))
			}
		}
	}
	if generated != (n == 1) {
		t.Errorf("%d Secrets rendered, want one only when the values name no existing Secret", n)
	}
}

// checkShape: what each value set must produce.
func checkShape(t *testing.T, name string, objs []runtime.Object, ws []workload) {
	kinds := map[string]int{}
	dnsServices := 0
	for _, o := range objs {
		kinds[fmt.Sprintf("%T", o)]++
		if s, ok := o.(*corev1.Service); ok && strings.Contains(s.Name, "-dns-") {
			dnsServices++
			var protos []string
			for _, p := range s.Spec.Ports {
				protos = append(protos, string(p.Protocol))
			}
			if slices.Sort(protos); !slices.Equal(protos, []string{"TCP", "UDP"}) {
				t.Errorf("Service %s: protocols %v, want TCP and UDP", s.Name, protos)
			}
		}
	}
	regions := map[string]int{"default": 1, "three-regions": 3, "tls": 1}[name]
	if dnsServices != regions {
		t.Errorf("%d DNS Services, want one for each of %d regions", dnsServices, regions)
	}
	// Two data-plane workloads per region, the voters, and ExternalDNS where enabled.
	want := 2*regions + 1
	if name != "default" {
		want++
	}
	if len(ws) != want {
		t.Errorf("%d workloads, want %d: %v", len(ws), want, kinds)
	}
	if got := kinds["*v1.ServiceMonitor"]; (name != "default") != (got == 1) {
		t.Errorf("%d ServiceMonitors for %s", got, name)
	}
	for _, w := range ws {
		args := strings.Join(w.pod.Spec.Containers[0].Args, " ")
		switch {
		case w.kind == "StatefulSet":
			if name == "tls" && (!strings.Contains(args, "-tls-cert=") || strings.Contains(args, "-raft-secret-file")) {
				t.Errorf("voters with TLS: %s", args)
			}
			if name != "tls" && !strings.Contains(args, "-raft-secret-file=") {
				t.Errorf("voters without TLS have no raft secret: %s", args)
			}
		case strings.Contains(w.name, "-checker-") || strings.Contains(w.name, "-location-"):
			if name == "three-regions" && len(w.pod.Spec.NodeSelector) == 0 {
				t.Errorf("%s %s: no nodeSelector for its region", w.kind, w.name)
			}
		}
	}
}

// vigilFlags returns the flags of `vigil CMD -h`, from a binary built from this repository.
func vigilFlags(t *testing.T, bin, cmd string) map[string]bool {
	t.Helper()
	out, _ := exec.Command(bin, cmd, "-h").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 5 {
		t.Fatalf("vigil %s -h: %d flags found in\n%s", cmd, len(flags), out)
	}
	return flags
}

// vigilBinary builds vigil from this repository into a temporary directory.
func vigilBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vigil")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/vigil")
	cmd.Dir = "../../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/vigil: %v\n%s", err, out)
	}
	return bin
}

// externalDNSVersion reads the ExternalDNS release the provider's tests run
// (externaldns/binary_test.go): the chart's default image must be that release.
func externalDNSVersion(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../../externaldns/binary_test.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const externalDNSVersion = "(v[0-9.]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("externaldns/binary_test.go: no externalDNSVersion")
	}
	return string(m[1])
}

// externalDNSFlags returns the flags of the external-dns binary the provider's tests built
// (VIGIL_EXTERNAL_DNS, or the user's cache), nil when there is none here.
func externalDNSFlags(t *testing.T) map[string]bool {
	t.Helper()
	bin := os.Getenv("VIGIL_EXTERNAL_DNS")
	if bin == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		bin = filepath.Join(cache, "vigil-test", "external-dns-"+externalDNSVersion(t), "external-dns")
	}
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Logf("no external-dns binary (%s: %v): its arguments are not checked against its flags", bin, err)
		return nil
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--(?:\[no-\])?([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	return flags
}

// checkExternalDNS: the ExternalDNS container runs the release the provider is tested with,
// with flags that release has.
func checkExternalDNS(t *testing.T, ws []workload, flags map[string]bool) {
	want := externalDNSVersion(t)
	for _, w := range ws {
		for _, c := range w.pod.Spec.Containers {
			if c.Name != "external-dns" {
				continue
			}
			if !strings.HasSuffix(c.Image, ":"+want) {
				t.Errorf("%s %s: image %s, want the ExternalDNS the provider is tested with (%s)", w.kind, w.name, c.Image, want)
			}
			for _, a := range c.Args {
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if !strings.HasPrefix(a, "--") || (flags != nil && !flags[name]) {
					t.Errorf("%s %s: argument %q is not a flag of external-dns %s", w.kind, w.name, a, want)
				}
			}
		}
	}
}
