package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kinderrors "sigs.k8s.io/kind/pkg/errors"
	kindexec "sigs.k8s.io/kind/pkg/exec"
	"sigs.k8s.io/yaml"
)

// The kind Go module the test bed links (the tests module's go.mod, tests/go.mod) is the one scripts/tools.sh builds bin/kind from
// and scripts/kind-node.sh takes the node image's base files from: a node image and a kind of
// different versions may not fit (kind's create steps expect its own base image's files).
func TestKindGoAPIIsThePinnedKind(t *testing.T) {
	root := filepath.Join("..", "..")
	env, err := os.ReadFile(filepath.Join(root, "scripts", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KIND_VERSION=(\S+)$`).FindSubmatch(env)
	if m == nil {
		t.Fatal("no KIND_VERSION in scripts/versions.env")
	}
	b, err := os.ReadFile(filepath.Join(root, "tests", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.ParseLax("tests/go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, r := range mod.Require {
		if r.Mod.Path == "sigs.k8s.io/kind" {
			got = r.Mod.Version
		}
	}
	if got != string(m[1]) {
		t.Errorf("tests/go.mod requires sigs.k8s.io/kind %q, scripts/versions.env pins KIND_VERSION=%s", got, m[1])
	}
}

// The configuration the clusters are created with is valid for the linked kind (strict decoding
// into its v1alpha4 types) and carries what the suites rely on.
func TestKindConfig(t *testing.T) {
	k := &Kind{Name: "x", Workers: 2, Registry: "172.17.0.1:5001"}
	var c v1alpha4.Cluster
	if err := yaml.UnmarshalStrict([]byte(k.Config()), &c); err != nil {
		t.Fatalf("kind config does not decode strictly: %v\n%s", err, k.Config())
	}
	var roles []v1alpha4.NodeRole
	for _, n := range c.Nodes {
		roles = append(roles, n.Role)
	}
	if want := []v1alpha4.NodeRole{v1alpha4.ControlPlaneRole, v1alpha4.WorkerRole, v1alpha4.WorkerRole}; !slices.Equal(roles, want) {
		t.Errorf("nodes %v, want %v", roles, want)
	}
	if !c.Networking.DisableDefaultCNI || c.Networking.KubeProxyMode != v1alpha4.IPTablesProxyMode {
		t.Errorf("networking %+v: want no default CNI (no kindnetd image) and iptables kube-proxy", c.Networking)
	}
	patches := strings.Join(c.KubeadmConfigPatches, "\n")
	for _, want := range []string{"failCgroupV1: false", "enable-admission-plugins: NodeRestriction,OwnerReferencesPermissionEnforcement"} {
		if !strings.Contains(patches, want) {
			t.Errorf("kubeadm patches lack %q:\n%s", want, patches)
		}
	}
	if len(c.ContainerdConfigPatches) != 1 || !strings.Contains(c.ContainerdConfigPatches[0], `registry.mirrors."172.17.0.1:5001"]`) ||
		!strings.Contains(c.ContainerdConfigPatches[0], `endpoint = ["http://172.17.0.1:5001"]`) {
		t.Errorf("containerd patches %q: want the registry as a plain-HTTP mirror", c.ContainerdConfigPatches)
	}
	var one v1alpha4.Cluster
	if err := yaml.UnmarshalStrict([]byte((&Kind{Name: "y"}).Config()), &one); err != nil || len(one.Nodes) != 1 || len(one.ContainerdConfigPatches) != 0 {
		t.Errorf("one node without a registry: %v, %d nodes, patches %q", err, len(one.Nodes), one.ContainerdConfigPatches)
	}
}

// *Kind is driven by e2e-framework's envfuncs as a cluster provider: its options reach it, and
// what it cannot honour fails before any container is started (no Docker needed here).
func TestKindAsE2EFrameworkProvider(t *testing.T) {
	k := &Kind{Workers: 1}
	k.WithOpts(WithNodeImage("kindest/node:v1.36.3"))
	if k.Image != "kindest/node:v1.36.3" {
		t.Errorf("WithNodeImage: Image %q", k.Image)
	}
	if _, err := k.WithName("po-unit").Create(context.Background(), "--retain"); err == nil || !strings.Contains(err.Error(), "no kind CLI arguments") {
		t.Errorf("Create with CLI arguments: %v, want a refusal", err)
	}
	if k.GetKubectlContext() != "kind-po-unit" {
		t.Errorf("kubectl context %q", k.GetKubectlContext())
	}
	// envfuncs.CreateClusterWithConfig names the cluster and asks Create; a kind version other
	// than the linked one is refused there.
	_, err := envfuncs.CreateClusterWithConfig(k.WithVersion("v0.26.0"), "po-unit-2", "")(context.Background(), envconf.New())
	if err == nil || !strings.Contains(err.Error(), "v0.26.0 asked for") {
		t.Errorf("CreateClusterWithConfig with another kind version: %v, want a refusal", err)
	}
	if k.Name != "po-unit-2" {
		t.Errorf("CreateClusterWithConfig did not name the cluster: %q", k.Name)
	}
}

// A command that fails inside kind (kubeadm init, say) is reported with its output, as the kind
// CLI prints it: without it a failed cluster start says only "exit status 1".
func TestKindErrorsCarryTheCommandOutput(t *testing.T) {
	inner := &kindexec.RunError{Command: []string{"kubeadm", "init"}, Output: []byte("[wait-control-plane] timed out\n"), Inner: errors.New("exit status 1")}
	for _, wrapped := range []error{kinderrors.Wrap(inner, "failed to init node with kubeadm"), fmt.Errorf("failed to init node with kubeadm: %w", inner)} {
		err := withCommandOutput(wrapped)
		if !strings.Contains(err.Error(), "[wait-control-plane] timed out") || !errors.Is(err, inner) {
			t.Errorf("error %q: want kubeadm's output and the RunError wrapped", err)
		}
	}
	if plain := errors.New("x"); withCommandOutput(plain).Error() != "x" {
		t.Error("an error without a RunError changed")
	}
}
