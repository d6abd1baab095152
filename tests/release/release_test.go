package release

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"golang.org/x/mod/modfile"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/platform-operators/platform-operators/tests/release/signing"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

const (
	releaseRegistryPort = 5002 // the e2e suite's registry has 5001, make up's 5000
	releaseCluster      = "po-release"
	releaseNS           = "platform-operators-system"
	pullSecretName      = "regcred"
	signingPassword     = "release-key-s3cret"
)

// TestReleaseRoundTrip publishes a release to a local registry with authentication (Debian's
// docker-registry, as Harbor's registry component) and consumes it as a user does: helm pull
// oci://, the image index and its SBOM and provenance referrers, then helm upgrade -i from the OCI
// chart on a kind cluster whose node pulls the manager image by digest with a pull secret, and a
// second helm upgrade. `make test-release` runs it (PO_RELEASE_TEST=1).
func TestReleaseRoundTrip(t *testing.T) {
	if os.Getenv("PO_RELEASE_TEST") != "1" {
		t.Skip("PO_RELEASE_TEST=1 (make test-release) runs the release round trip: it needs Docker, kind and the registry")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gw, err := testbed.DockerBridgeGateway(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg := testbed.Registry{Dir: filepath.Join(dir, "registry"), Host: gw, Port: releaseRegistryPort, User: "robot-release", Password: "release-s3cret"}
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop() })
	dockerConfig := filepath.Join(dir, "docker")
	if err := os.MkdirAll(dockerConfig, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dockerConfig, "config.json"), reg.DockerConfigJSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dockerConfig)

	// Anonymous pulls are refused: the round trip below really authenticates.
	if _, err := remote.Head(mustRef(t, reg.Addr()+"/platform/manager:nothing")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("anonymous HEAD on the registry: %v, want 401 Unauthorized", err)
	}

	// A throwaway cosign key pair signs this release; the test verifies with its public half.
	keys, err := signing.GenerateKeyPair([]byte(signingPassword))
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "cosign.key")
	if err := os.WriteFile(keyFile, keys.Private, 0o600); err != nil {
		t.Fatal(err)
	}
	// And a throwaway OpenPGP key the chart's Helm provenance (.prov): users verify with its public
	// keyring (helm pull --verify --keyring).
	helmKey := writeHelmKey(t, filepath.Join(dir, "gnupg"), "release", []byte(signingPassword))

	commit := strings.TrimSpace(run(t, ctx, root, "git", "rev-parse", "HEAD"))
	start := time.Now()
	res, err := Run(ctx, Options{Root: root, Commit: commit, Registry: reg.Addr() + "/platform", OutDir: filepath.Join(dir, "out"),
		Push: true, PlainHTTP: true, SigningKey: keyFile, SigningPassword: []byte(signingPassword), Out: testWriter{t},
		HelmKey: HelmKey{Keyring: helmKey.secret, Name: "release@example.com", Passphrase: []byte(signingPassword)}})
	if err != nil {
		t.Fatal(err)
	}
	if pub, err := os.ReadFile(res.PublicKey); err != nil || string(pub) != string(keys.Public) {
		t.Errorf("the release's cosign.pub (%s): %v, want the signing key's public half", res.PublicKey, err)
	}
	if pub, err := os.ReadFile(res.HelmPublicKeyring); err != nil || string(pub) != string(helmKey.public) {
		t.Errorf("the release's Helm public keyring (%s): %v, want the chart signing key's public half", res.HelmPublicKeyring, err)
	}
	t.Logf("release %s pushed in %s: %s@%s, chart %s", res.Version, time.Since(start).Round(time.Millisecond), res.Image, res.IndexDigest, res.ChartDigest)

	// helm pull oci:// with the registry's credentials and --verify: the chart at VERSION, its
	// Helm provenance pulled with it and checked against the release's public keyring.
	helm := filepath.Join(testbed.Bin(root), "helm")
	pulled := filepath.Join(dir, "pulled")
	pull := func(dest string) (string, error) {
		c := exec.CommandContext(ctx, helm, "pull", "oci://"+reg.Addr()+"/platform/charts/platform-operators", "--version", res.Version,
			"--plain-http", "--registry-config", filepath.Join(dockerConfig, "config.json"), "--verify", "--keyring", res.HelmPublicKeyring, "--untar", "-d", dest)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := pull(pulled); err != nil {
		t.Fatalf("helm pull --verify of the release: %v\n%s", err, out)
	} else {
		t.Logf("helm pull --verify: %s", strings.TrimSpace(out))
	}
	var meta chartMeta
	b, err := os.ReadFile(filepath.Join(pulled, "platform-operators", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Version != res.Version || meta.AppVersion != res.Version {
		t.Errorf("pulled chart version %q appVersion %q, want %s", meta.Version, meta.AppVersion, res.Version)
	}

	// The index by tag: both platforms, the digest the release reported.
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	idx, err := remote.Index(mustRef(t, res.Image), auth)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	if d.String() != res.IndexDigest {
		t.Errorf("tag %s points at %s, release said %s", res.Image, d, res.IndexDigest)
	}
	im, _ := idx.IndexManifest()
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("index platforms %v, want linux/amd64 and linux/arm64", platforms)
	}

	// The provenance is a referrer of the index and names the commit; each platform image has an
	// SBOM referrer listing controller-runtime at the go.mod version.
	repo := mustRef(t, res.Image).Context()
	prov := referrerDoc(t, repo, res.IndexDigest, ProvenanceMediaType)
	if !strings.Contains(string(prov), `"gitCommit": "`+commit+`"`) || !strings.Contains(string(prov), SLSAProvenanceV1) {
		t.Errorf("provenance does not name commit %s as SLSA v1:\n%s", commit, prov)
	}
	want := "pkg:golang/sigs.k8s.io/controller-runtime@" + goModVersion(t, root, "sigs.k8s.io/controller-runtime")
	for _, m := range im.Manifests {
		sbom := referrerDoc(t, repo, m.Digest.String(), SBOMMediaType)
		if !strings.Contains(string(sbom), want) {
			t.Errorf("SBOM of %s/%s does not list %s", m.Platform.OS, m.Platform.Architecture, want)
		}
		if !strings.Contains(string(sbom), `"value": "`+m.Platform.Architecture+`"`) {
			t.Errorf("SBOM of %s does not record GOARCH=%s", m.Digest, m.Platform.Architecture)
		}
	}

	// The CLI artifact: an archive per platform and checksums.txt, each layer the file the
	// release wrote (its digest is the sha256 checksums.txt lists).
	cliImg, err := remote.Image(mustRef(t, res.CLI), auth)
	if err != nil {
		t.Fatal(err)
	}
	cliManifest, err := cliImg.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(res.CLIChecksums)
	if err != nil {
		t.Fatal(err)
	}
	if len(cliManifest.Layers) != len(CLIPlatforms)+1 || string(cliManifest.Config.MediaType) != CLIArtifactType {
		t.Errorf("the CLI artifact %s: %d layers of config %s, want %d archives and checksums.txt", res.CLI, len(cliManifest.Layers), cliManifest.Config.MediaType, len(CLIPlatforms))
	}
	for _, l := range cliManifest.Layers[:len(cliManifest.Layers)-1] {
		if line := l.Digest.Hex + "  " + l.Annotations["org.opencontainers.image.title"]; !strings.Contains(string(sums), line) {
			t.Errorf("checksums.txt lacks the pushed layer %q", line)
		}
	}

	// Signatures and attestations, verified with the public key as `cosign verify --key` and
	// `cosign verify-attestation --key` do; then a tampered image and chart must fail.
	start = time.Now()
	checkSignatures(t, ctx, res, keys.Public, commit, want)
	checkTamperedFails(t, ctx, res, keys.Public, pull)
	t.Logf("signatures, attestations and tampering checked in %s", time.Since(start).Round(time.Millisecond))

	// A cluster whose node pulls from the registry with a pull secret; install from the OCI chart
	// with the image by digest, then upgrade.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	k := testbed.Kind{Name: releaseCluster, Root: root, Kubeconfig: kubeconfig, Registry: reg.Addr(), Out: testWriter{t}}
	if err := k.Down(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := k.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			_ = k.ExportLogs(context.Background(), filepath.Join(testbed.Bin(root), "release-test-logs"))
		}
		_ = k.Down(context.Background())
	})
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(releaseNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pullSecretName},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(dir, "values.yaml")
	vb, _ := yaml.Marshal(map[string]any{
		"image":            map[string]any{"registry": reg.Addr() + "/platform", "repository": "manager", "digest": res.IndexDigest},
		"imagePullSecrets": []any{map[string]any{"name": pullSecretName}},
		"replicaCount":     1,
	})
	if err := os.WriteFile(values, vb, 0o600); err != nil {
		t.Fatal(err)
	}
	// Installed as docs/release.md tells users to: the chart by the digest whose signature was
	// verified above, not by its tag, which could move between verifying and installing.
	helmUpgrade := func(extra ...string) {
		args := append([]string{"upgrade", "-i", "platform-operators", "oci://" + reg.Addr() + "/platform/charts/platform-operators@" + res.ChartDigest,
			"--plain-http", "--registry-config", filepath.Join(dockerConfig, "config.json"),
			"--kubeconfig", kubeconfig, "-n", releaseNS, "-f", values, "--wait", "--timeout", "4m"}, extra...)
		run(t, ctx, root, helm, args...)
	}
	start = time.Now()
	helmUpgrade()
	t.Logf("helm upgrade -i from oci:// ready in %s", time.Since(start).Round(time.Millisecond))
	checkPodsByDigest(t, ctx, cs, reg.Addr()+"/platform/manager@"+res.IndexDigest)
	start = time.Now()
	helmUpgrade("--set", "logging.level=debug")
	t.Logf("second helm upgrade ready in %s", time.Since(start).Round(time.Millisecond))
	hist := run(t, ctx, root, helm, "history", "platform-operators", "--kubeconfig", kubeconfig, "-n", releaseNS, "-o", "json")
	var revs []struct {
		Revision int    `json:"revision"`
		Status   string `json:"status"`
		Chart    string `json:"chart"`
	}
	if err := json.Unmarshal([]byte(hist), &revs); err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 || revs[1].Status != "deployed" || revs[1].Chart != "platform-operators-"+res.Version {
		t.Errorf("helm history = %+v, want 2 revisions, the last deployed from platform-operators-%s", revs, res.Version)
	}
	checkPodsByDigest(t, ctx, cs, reg.Addr()+"/platform/manager@"+res.IndexDigest)
	// helm test --logs, as CI systems run it on a release installed from the OCI chart: the test pod
	// runs the manager image by the same digest and its log is read after it succeeded.
	if out := run(t, ctx, root, helm, "test", "platform-operators", "--kubeconfig", kubeconfig, "-n", releaseNS, "--logs", "--timeout", "3m"); !strings.Contains(out, "200 OK") {
		t.Errorf("helm test --logs printed no 200 OK from the test pod:\n%s", out)
	}

	// helm uninstall leaves what docs/uninstall.md says it leaves.
	kubectl := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, filepath.Join(testbed.Bin(root), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	work := filepath.Join(dir, "work.yaml")
	if err := os.WriteFile(work, []byte(uninstallWork), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl("apply", "-f", work); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	if wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		_, err := kubectl("-n", "tenant-a", "get", "secret", "shared")
		return err == nil, nil
	}) != nil {
		t.Fatal("the SecretSync's copy never appeared in tenant-a")
	}
	run(t, ctx, root, helm, "uninstall", "platform-operators", "--kubeconfig", kubeconfig, "-n", releaseNS, "--wait", "--timeout", "2m")
	for _, tc := range []struct {
		args []string
		stay bool
	}{
		{[]string{"-n", releaseNS, "get", "deployment", "platform-operators"}, false},
		{[]string{"get", "clusterrole", "platform-operators-manager"}, false},
		{[]string{"get", "crd", "secretsyncs.ops.platform-operators.io", "copyrequests.ops.platform-operators.io", "ats.ops.platform-operators.io", "scheduledjobs.ops.platform-operators.io"}, true},
		{[]string{"-n", releaseNS, "get", "pod", "platform-operators-test-readyz"}, true},
		{[]string{"get", "secretsync", "uninstall"}, true},
		{[]string{"-n", "tenant-a", "get", "secret", "shared"}, true},
		{[]string{"-n", "tenant-a", "get", "scheduledjob", "nightly"}, true},
		{[]string{"get", "namespace", "secretsync"}, true},
	} {
		out, err := kubectl(tc.args...)
		if stayed := err == nil; stayed != tc.stay {
			t.Errorf("after helm uninstall, kubectl %s: %v %s; want it to stay: %t (docs/uninstall.md)", strings.Join(tc.args, " "), err, out, tc.stay)
		}
	}
	// The kept test pod goes as docs/uninstall.md says.
	if out, err := kubectl("-n", releaseNS, "delete", "pod", "platform-operators-test-readyz", "--timeout=60s"); err != nil {
		t.Errorf("deleting the kept helm test pod as docs/uninstall.md says: %v %s", err, out)
	}
	// No finalizer of ours holds anything: deleting the SecretSync without a manager returns.
	if out, err := kubectl("delete", "secretsync", "uninstall", "--timeout=30s"); err != nil {
		t.Errorf("deleting a SecretSync with no manager running: %v %s", err, out)
	}
}

// uninstallWork is what a user has made before uninstalling: a SecretSync with a copy in a tenant
// namespace, and a ScheduledJob.
const uninstallWork = `apiVersion: v1
kind: Namespace
metadata: {name: tenant-a}
---
apiVersion: v1
kind: Secret
metadata: {name: shared, namespace: secretsync}
stringData: {token: s3cr3t}
---
apiVersion: ops.platform-operators.io/v1alpha1
kind: SecretSync
metadata: {name: uninstall}
spec:
  source: {namespace: secretsync, name: shared}
  target: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: tenant-a}}}
---
apiVersion: ops.platform-operators.io/v1alpha1
kind: ScheduledJob
metadata: {name: nightly, namespace: tenant-a}
spec:
  schedule: "0 2 * * *"
  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}
`

// checkPodsByDigest asserts the manager pods run image (a reference by digest), Ready, and that
// the node reports the pulled image by that digest.
func checkPodsByDigest(t *testing.T, ctx context.Context, cs kubernetes.Interface, image string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	_, digest, _ := strings.Cut(image, "@")
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		running++
		if got := p.Spec.Containers[0].Image; got != image {
			t.Errorf("pod %s runs %s, want %s", p.Name, got, image)
		}
		for _, st := range p.Status.ContainerStatuses {
			if !st.Ready || !strings.HasSuffix(st.ImageID, "@"+digest) {
				t.Errorf("pod %s container %s: ready %v, imageID %s, want ready and @%s", p.Name, st.Name, st.Ready, st.ImageID, digest)
			}
		}
	}
	if running == 0 {
		t.Fatalf("no running manager pod in %s", releaseNS)
	}
}

// referrerDoc returns the one layer of the referrer of subject whose artifactType is mediaType.
func referrerDoc(t *testing.T, repo name.Repository, subject, mediaType string) []byte {
	t.Helper()
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	refs, err := remote.Referrers(repo.Digest(subject), auth)
	if err != nil {
		t.Fatalf("referrers of %s: %v", subject, err)
	}
	m, err := refs.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, desc := range m.Manifests {
		if desc.ArtifactType != mediaType {
			continue
		}
		img, err := remote.Image(repo.Digest(desc.Digest.String()), auth)
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("referrer %s: %d layers, %v", desc.Digest, len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b := new(strings.Builder)
		if _, err := io.Copy(b, rc); err != nil {
			t.Fatal(err)
		}
		return []byte(b.String())
	}
	t.Fatalf("no referrer of type %s for %s (got %d referrers)", mediaType, subject, len(m.Manifests))
	return nil
}

func goModVersion(t *testing.T, root, module string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version
		}
	}
	t.Fatalf("%s not in go.mod", module)
	return ""
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, ctx context.Context, dir, bin string, args ...string) string {
	t.Helper()
	c := exec.CommandContext(ctx, bin, args...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// verifier checks against publicKey in the test registry (plain HTTP, credentials from
// $DOCKER_CONFIG).
func verifier(t *testing.T, publicKey []byte) *signing.Verifier {
	t.Helper()
	v, err := signing.NewVerifier(publicKey, ociremote.WithRemoteOptions(remote.WithAuthFromKeychain(authn.DefaultKeychain)),
		ociremote.WithNameOptions(name.Insecure))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkSignatures verifies the release as a user does with its public key: the index by its tag,
// each platform image, the chart by its tag; the SLSA provenance attestation of the index and of
// the chart (it must name commit) and each platform image's CycloneDX SBOM attestation (it must
// hold sbomWants). Another key must verify none of it.
func checkSignatures(t *testing.T, ctx context.Context, res Result, publicKey []byte, commit, sbomWants string) {
	t.Helper()
	v := verifier(t, publicKey)
	if d, err := v.VerifySignature(ctx, mustRef(t, res.Image)); err != nil || d.DigestStr() != res.IndexDigest {
		t.Errorf("cosign verify %s: %s, %v; want the index %s verified", res.Image, d, err, res.IndexDigest)
	}
	if d, err := v.VerifySignature(ctx, mustRef(t, res.Chart)); err != nil || d.DigestStr() != res.ChartDigest {
		t.Errorf("cosign verify %s: %s, %v; want the chart %s verified", res.Chart, d, err, res.ChartDigest)
	}
	if d, err := v.VerifySignature(ctx, mustRef(t, res.CLI)); err != nil || d.DigestStr() != res.CLIDigest {
		t.Errorf("cosign verify %s: %s, %v; want the CLI artifact %s verified", res.CLI, d, err, res.CLIDigest)
	}
	repo := mustRef(t, res.Image).Context()
	for p, dg := range res.PlatformDigests {
		ref := repo.Digest(dg)
		if _, err := v.VerifySignature(ctx, ref); err != nil {
			t.Errorf("cosign verify %s (%s): %v", ref, p, err)
		}
		sts, err := v.VerifyAttestation(ctx, ref, signing.PredicateCycloneDX)
		if err != nil {
			t.Errorf("cosign verify-attestation --type cyclonedx %s (%s): %v", ref, p, err)
			continue
		}
		if len(sts) != 1 || !strings.Contains(string(sts[0].Predicate), sbomWants) {
			t.Errorf("the signed SBOM of %s: %d statements, want one listing %s", p, len(sts), sbomWants)
		}
	}
	for _, ref := range []string{res.Image, res.Chart, res.CLI} {
		sts, err := v.VerifyAttestation(ctx, mustRef(t, ref), signing.PredicateSLSAProvenanceV1)
		if err != nil {
			t.Errorf("cosign verify-attestation --type slsaprovenance1 %s: %v", ref, err)
			continue
		}
		if len(sts) != 1 || !strings.Contains(string(sts[0].Predicate), commit) {
			t.Errorf("the signed provenance of %s: %d statements, want one naming commit %s", ref, len(sts), commit)
		}
	}
	other, err := signing.GenerateKeyPair([]byte("another key"))
	if err != nil {
		t.Fatal(err)
	}
	w := verifier(t, other.Public)
	for _, ref := range []string{res.Image, res.Chart, res.CLI} {
		if _, err := w.VerifySignature(ctx, mustRef(t, ref)); err == nil {
			t.Errorf("cosign verify %s with another key passed", ref)
		}
		if _, err := w.VerifyAttestation(ctx, mustRef(t, ref), signing.PredicateSLSAProvenanceV1); err == nil {
			t.Errorf("cosign verify-attestation %s with another key passed", ref)
		}
	}
}

// checkTamperedFails pushes a different image index to the release's image tag and a modified
// chart (with the release's .prov beside it) to its chart tag, as an attacker with push rights
// would, and requires verification by tag to fail for both, cosign's and (helmPull, a `helm pull
// --verify` into a directory) Helm's; then it puts the released manifests back under their tags, so what follows
// installs the real release.
func checkTamperedFails(t *testing.T, ctx context.Context, res Result, publicKey []byte, helmPull func(dest string) (string, error)) {
	t.Helper()
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	imageTag, chartTag := mustRef(t, res.Image), mustRef(t, res.Chart)
	origIndex, err := remote.Get(imageTag.Context().Digest(res.IndexDigest), auth)
	if err != nil {
		t.Fatal(err)
	}
	origChart, err := remote.Get(chartTag.Context().Digest(res.ChartDigest), auth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Put the release back whatever happened, so the next assertions see the signed artifacts.
		_ = remote.Tag(imageTag.(name.Tag), origIndex, auth)
		_ = remote.Tag(chartTag.(name.Tag), origChart, auth)
	})

	// The image: the same index with one annotation more is another digest under the same tag.
	idx, err := origIndex.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tampered := mutate.Annotations(idx, map[string]string{"org.opencontainers.image.description": "tampered"}).(v1.ImageIndex)
	if err := remote.WriteIndex(imageTag, tampered, auth); err != nil {
		t.Fatal(err)
	}
	// The chart: the released package with its description changed, pushed to the chart's tag.
	chartPkg, err := os.ReadFile(res.ChartPackage)
	if err != nil {
		t.Fatal(err)
	}
	chrt, err := loader.LoadArchive(bytes.NewReader(chartPkg))
	if err != nil {
		t.Fatal(err)
	}
	chrt.Metadata.Description = "tampered"
	tmp := t.TempDir()
	pkg, err := chartutil.Save(chrt, tmp)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := registry.NewClient(registry.ClientOptCredentialsFile(dockerConfigFile()), registry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	prov, err := os.ReadFile(res.ChartProvenance)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := rc.Push(b, res.Chart, registry.PushOptProvData(prov))
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Manifest.Digest == res.ChartDigest {
		t.Fatal("the tampered chart has the released chart's digest: the tampering changed nothing")
	}

	v := verifier(t, publicKey)
	for _, tc := range []struct {
		ref  name.Reference
		want string
	}{
		{imageTag, res.IndexDigest},
		{chartTag, res.ChartDigest},
	} {
		d, err := v.VerifySignature(ctx, tc.ref)
		switch {
		case err == nil:
			t.Errorf("cosign verify %s passed after the tag was moved to %s (released %s)", tc.ref, d, tc.want)
		case d.DigestStr() == tc.want:
			t.Errorf("the tag %s still points at the released %s: the tampering did not happen", tc.ref, tc.want)
		default:
			t.Logf("tampered %s (now %s): verification fails as it must: %v", tc.ref, d.DigestStr(), err)
		}
		if _, err := v.VerifyAttestation(ctx, tc.ref, signing.PredicateSLSAProvenanceV1); err == nil {
			t.Errorf("cosign verify-attestation %s passed after the tag was moved", tc.ref)
		}
	}
	if out, err := helmPull(t.TempDir()); err == nil {
		t.Errorf("helm pull --verify passed on the tampered chart with the release's .prov:\n%s", out)
	} else {
		t.Logf("tampered chart: helm pull --verify fails as it must: %s", strings.TrimSpace(out))
	}
	// Back to the release: the signed digests verify again under their tags.
	if err := remote.Tag(imageTag.(name.Tag), origIndex, auth); err != nil {
		t.Fatal(err)
	}
	if err := remote.Tag(chartTag.(name.Tag), origChart, auth); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []name.Reference{imageTag, chartTag} {
		if _, err := v.VerifySignature(ctx, ref); err != nil {
			t.Errorf("after restoring %s: %v", ref, err)
		}
	}
	if out, err := helmPull(t.TempDir()); err != nil {
		t.Errorf("helm pull --verify after restoring %s: %v\n%s", chartTag, err, out)
	}
}
