// Package check validates the Kubernetes manifests of deploy/kubernetes
// offline, with no cluster: every document decodes strictly into its
// k8s.io/api type (an unknown or misspelled field, a duplicate key or a
// value of the wrong type fails), the Deployment keeps the security and
// shape docs/operators.md promises, every flag it passes is one the
// gateway's --help names, and the host token arranged as a Secret volume
// with fsGroup is a file the gateway accepts.
//
// It is a module of its own so that the gateway's go.mod does not take on
// the k8s.io modules. Run it from here: go test ./...
package check

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const manifests = ".."

// kustomization is the part of a Kustomization the manifests use; a field
// beyond it fails the strict decode, so it cannot be used unchecked.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// objects are the decoded documents, by kind.
type objects struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	configMaps  []corev1.ConfigMap
	policies    []networkingv1.NetworkPolicy
	kust        kustomization
}

// documents splits a YAML stream at its "---" lines.
func documents(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(b), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(d, "")) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// strict decodes one document into v as the API server's strict field
// validation does: YAML to JSON refusing duplicate keys, then JSON into
// the type case-sensitively, refusing unknown and duplicate fields
// (encoding/json alone would take runAsNonroot for runAsNonRoot).
func strict(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

func load(t *testing.T) objects {
	t.Helper()
	var o objects
	kb, err := os.ReadFile(filepath.Join(manifests, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := strict(kb, &o.kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if o.kust.APIVersion != "kustomize.config.k8s.io/v1beta1" || o.kust.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: apiVersion %q kind %q", o.kust.APIVersion, o.kust.Kind)
	}
	// Every YAML file of the directory is a resource of the kustomization,
	// and every resource a file.
	files, _ := filepath.Glob(filepath.Join(manifests, "*.yaml"))
	var have []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			have = append(have, b)
		}
	}
	want := slices.Clone(o.kust.Resources)
	sort.Strings(want)
	if !slices.Equal(have, want) {
		t.Fatalf("kustomization.yaml resources %v, the directory's YAML files %v", want, have)
	}
	for _, name := range o.kust.Resources {
		b, err := os.ReadFile(filepath.Join(manifests, name))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range documents(b) {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s, document %d: %v", name, i+1, err)
			}
			where := fmt.Sprintf("%s, document %d (%s %s)", name, i+1, meta.APIVersion, meta.Kind)
			var err error
			switch meta.APIVersion + " " + meta.Kind {
			case "apps/v1 Deployment":
				var d appsv1.Deployment
				err = strict(doc, &d)
				o.deployments = append(o.deployments, d)
			case "v1 Service":
				var s corev1.Service
				err = strict(doc, &s)
				o.services = append(o.services, s)
			case "v1 ConfigMap":
				var c corev1.ConfigMap
				err = strict(doc, &c)
				o.configMaps = append(o.configMaps, c)
			case "networking.k8s.io/v1 NetworkPolicy":
				var p networkingv1.NetworkPolicy
				err = strict(doc, &p)
				o.policies = append(o.policies, p)
			default:
				t.Fatalf("%s: a kind this check does not decode: add it", where)
			}
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		}
	}
	return o
}

func (o objects) deployment(t *testing.T, name string) appsv1.Deployment {
	t.Helper()
	for _, d := range o.deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return appsv1.Deployment{}
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

// TestStrictDecode: every document decodes strictly, and the strict
// decoder does refuse what it must (a misspelled field, a duplicate key,
// a string where a number goes).
func TestStrictDecode(t *testing.T) {
	o := load(t)
	if len(o.deployments) != 2 || len(o.services) != 3 || len(o.policies) != 3 || len(o.configMaps) != 1 {
		t.Fatalf("decoded %d Deployments, %d Services, %d NetworkPolicies, %d ConfigMaps; want 2, 3, 3, 1",
			len(o.deployments), len(o.services), len(o.policies), len(o.configMaps))
	}
	var d appsv1.Deployment
	for _, bad := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 2\n",
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 2\n  replicas: 3\n",
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: two\n",
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      securityContext:\n        runAsNonroot: true\n",
	} {
		if err := strict([]byte(bad), &d); err == nil {
			t.Errorf("the strict decode accepted %q", bad)
		}
	}
}

// TestGatewayDeployment: the Deployment is what docs/operators.md says.
func TestGatewayDeployment(t *testing.T) {
	o := load(t)
	d := o.deployment(t, "loom-gateway")
	spec := d.Spec.Template.Spec
	gw := container(t, spec, "gateway")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 || psc.FSGroup == nil {
		t.Fatalf("pod securityContext %+v: want runAsNonRoot, a non-zero runAsUser and an fsGroup", psc)
	}
	sp := psc.SeccompProfile
	if sp == nil || sp.Type != corev1.SeccompProfileTypeLocalhost || sp.LocalhostProfile == nil {
		t.Fatalf("seccompProfile %+v: want Localhost", sp)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "seccomp", filepath.Base(*sp.LocalhostProfile))); err != nil {
		t.Errorf("seccompProfile %s: the repository ships no such profile under deploy/seccomp: %v", *sp.LocalhostProfile, err)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken: want false (the gateway does not talk to the API server)")
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("container %s securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, every capability dropped", c.Name, sc)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("container %s resources %+v: want cpu and memory requests and a memory limit", c.Name, c.Resources)
		}
	}

	ports := map[string]int32{}
	for _, p := range gw.Ports {
		ports[p.Name] = p.ContainerPort
	}
	args := flagValues(gw.Args)
	for name, flag := range map[string]string{"agent": "listen", "host": "host-listen"} {
		if want := fmt.Sprintf("0.0.0.0:%d", ports[name]); ports[name] == 0 || args[flag] != want {
			t.Errorf("--%s %q and port %s (%d): want --%s %s", flag, args[flag], name, ports[name], flag, want)
		}
	}
	for probe, p := range map[string]*corev1.Probe{"liveness /healthz": gw.LivenessProbe, "readiness /readyz": gw.ReadinessProbe} {
		path := strings.Fields(probe)[1]
		// /readyz is served by the host listener only; /healthz by both.
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port != intstr.FromString("host") {
			t.Errorf("%s probe %+v: want an httpGet of %s on the host port", probe, p, path)
		}
	}

	// The host token: a Secret volume, group-readable through fsGroup.
	mounts := map[string]string{}
	for _, m := range gw.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	var secret *corev1.SecretVolumeSource
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Name == "token" {
			secret = v.Secret
		}
	}
	if secret == nil || secret.DefaultMode == nil || *secret.DefaultMode != 0o440 {
		t.Fatalf("the token volume %+v: want a Secret with defaultMode 0440", secret)
	}
	if want := mounts["token"] + "/host-token"; args["host-token-file"] != want {
		t.Errorf("--host-token-file %q: want %s (the Secret's key host-token)", args["host-token-file"], want)
	}
	if want := mounts["config"] + "/loom-retrieval.json"; args["loom-retrieval-config"] != want {
		t.Errorf("--loom-retrieval-config %q: want %s", args["loom-retrieval-config"], want)
	}

	// Every Service and NetworkPolicy port names a port of the pods it selects.
	redis := o.deployment(t, "loom-gateway-redis")
	podPorts := func(labels map[string]string) map[string]bool {
		for _, dep := range []appsv1.Deployment{d, redis} {
			if mapsEqual(dep.Spec.Template.Labels, labels) {
				names := map[string]bool{}
				for _, c := range dep.Spec.Template.Spec.Containers {
					for _, p := range c.Ports {
						names[p.Name] = true
					}
				}
				return names
			}
		}
		return nil
	}
	for _, s := range o.services {
		names := podPorts(s.Spec.Selector)
		if names == nil {
			t.Errorf("Service %s selects no pod of the manifests (%v)", s.Name, s.Spec.Selector)
		}
		for _, p := range s.Spec.Ports {
			if !names[p.TargetPort.StrVal] {
				t.Errorf("Service %s targets port %q, which its pods do not name", s.Name, p.TargetPort.String())
			}
		}
	}
	from := map[string]string{}
	for _, p := range o.policies {
		names := podPorts(p.Spec.PodSelector.MatchLabels)
		if names == nil {
			t.Errorf("NetworkPolicy %s selects no pod of the manifests", p.Name)
		}
		if len(p.Spec.Ingress) != 1 || len(p.Spec.Ingress[0].Ports) != 1 || len(p.Spec.Ingress[0].From) != 1 {
			t.Errorf("NetworkPolicy %s: want one ingress rule, from one peer, to one port", p.Name)
			continue
		}
		port := p.Spec.Ingress[0].Ports[0].Port.StrVal
		if !names[port] {
			t.Errorf("NetworkPolicy %s allows port %q, which its pods do not name", p.Name, port)
		}
		peer := p.Spec.Ingress[0].From[0]
		switch {
		case peer.NamespaceSelector != nil && peer.PodSelector == nil:
			from[port] = "namespace " + peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
		case peer.PodSelector != nil && peer.NamespaceSelector == nil:
			from[port] = "pods " + peer.PodSelector.MatchLabels["app.kubernetes.io/name"]
		}
	}
	want := map[string]string{"agent": "namespace agents", "host": "namespace loom-host", "redis": "pods loom-gateway"}
	if !mapsEqual(from, want) {
		t.Errorf("NetworkPolicies admit %v, want %v", from, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// flagValues reads "--name=value" arguments.
func flagValues(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		name, value, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		m[name] = value
	}
	return m
}

// TestFlagsInHelp: every flag the manifests pass is one the gateway's
// --help names, written --name=value.
func TestFlagsInHelp(t *testing.T) {
	o := load(t)
	gw := container(t, o.deployment(t, "loom-gateway").Spec.Template.Spec, "gateway")
	help, err := exec.Command(gateway(t), "--help").CombinedOutput()
	if err != nil && !bytes.Contains(help, []byte("Usage:")) {
		t.Fatalf("gateway --help: %v\n%s", err, help)
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		known[m[1]] = true
	}
	if !known["listen"] || !known["host-token-file"] {
		t.Fatalf("could not read the flags of gateway --help:\n%s", help)
	}
	for _, a := range gw.Args {
		if !strings.HasPrefix(a, "--") || !strings.Contains(a, "=") {
			t.Errorf("argument %q: write each flag as --name=value", a)
			continue
		}
		name, _, _ := strings.Cut(a[2:], "=")
		if !known[name] {
			t.Errorf("argument %q: the gateway has no flag --%s (gateway --help)", a, name)
		}
	}
	if len(gw.Command) > 0 {
		t.Errorf("command %v: the image's entrypoint is the gateway; pass flags as args", gw.Command)
	}
}
