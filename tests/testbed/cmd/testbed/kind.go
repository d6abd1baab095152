package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

const (
	// upRegistryPort is the port of `make up`'s registry (the e2e suite's uses another).
	upRegistryPort = 5000
	// upRobot is the registry account `make up` pushes with, CI's Harbor-style robot account: push
	// and pull on every project. It is never given to the cluster.
	upRobot = "robot$platform+ci"
	// upManagerRobot may pull from project platform only (the manager image): the manager's pods'
	// pull secret (managerPullSecret), in the release namespace only.
	upManagerRobot = "robot$platform+manager-pull"
	// upTenantsRobot may pull from project tenants only (the job image, the tenants' images): the
	// pull secret the manager spreads to every namespace (pullSecret.sync).
	upTenantsRobot = "robot$tenants+pull"
	// upManagerProject and upTenantsProject are the registry's two projects.
	upManagerProject, upTenantsProject = "platform", "tenants"
	// upSelector selects the chart's manager pods.
	upSelector = "app.kubernetes.io/name=platform-operators,app.kubernetes.io/component=manager"
)

func (c config) kind(registry string) *testbed.Kind {
	return &testbed.Kind{Name: c.cluster, Root: c.root, Workers: c.workers, Kubeconfig: filepath.Join(c.dir, "kubeconfig"),
		Registry: registry, Out: os.Stderr}
}

func (c config) registry(host string) (testbed.Registry, error) {
	dir := filepath.Join(c.dir, "registry")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return testbed.Registry{}, err
	}
	pw, err := password(filepath.Join(dir, "password"))
	if err != nil {
		return testbed.Registry{}, err
	}
	managerPW, err := password(filepath.Join(dir, "password-manager-pull"))
	if err != nil {
		return testbed.Registry{}, err
	}
	tenantsPW, err := password(filepath.Join(dir, "password-tenants-pull"))
	if err != nil {
		return testbed.Registry{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return testbed.Registry{}, err
	}
	return testbed.Registry{Dir: dir, Host: host, Port: upRegistryPort, User: upRobot, Password: pw,
		Accounts:     upAccounts(managerPW, tenantsPW),
		ProxyCommand: []string{exe, "registry-proxy"}}, nil
}

// upAccounts are the registry's pull-only accounts, as docs/chart.md ("Harbor") sets up Harbor:
// the manager's (project platform) and the tenants' (project tenants), neither able to push.
func upAccounts(managerPassword, tenantsPassword string) []testbed.RegistryAccount {
	return []testbed.RegistryAccount{
		{User: upManagerRobot, Password: managerPassword, Pull: []string{upManagerProject}},
		{User: upTenantsRobot, Password: tenantsPassword, Pull: []string{upTenantsProject}},
	}
}

// account returns reg's account named user.
func account(reg testbed.Registry, user string) testbed.RegistryAccount {
	for _, a := range reg.Accounts {
		if a.User == user {
			return a
		}
	}
	panic("no registry account " + user)
}

// password returns the password kept in file, made (random) on first use: one per test bed, so a
// second `make up` matches the pull secrets already in the cluster.
func password(file string) (string, error) {
	pw, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		pw = []byte(hex.EncodeToString(b))
		err = os.WriteFile(file, pw, 0o600)
	}
	return string(pw), err
}

// upKind is `make up` on real nodes: a kind cluster, a registry with credentials, the manager and
// job images built here and pushed there, and the chart installed as `helm upgrade -i --wait`
// does with the registry as image.registry and a pull secret for it.
func upKind(ctx context.Context, c config) error {
	start := time.Now()
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	gw, err := testbed.DockerBridgeGateway(ctx)
	if err != nil {
		return err
	}
	reg, err := c.registry(gw)
	if err != nil {
		return err
	}
	step("registry %s (Debian's docker-registry behind an access proxy: %s pushes, %s pulls %s/*, %s pulls %s/*; storage %s)",
		reg.Addr(), upRobot, upManagerRobot, upManagerProject, upTenantsRobot, upTenantsProject, reg.Dir)
	if err := reg.Start(ctx); err != nil {
		return err
	}
	k := c.kind(reg.Addr())
	step("kind cluster %q (%d node(s), node image from scripts/kind-node.sh)", c.cluster, 1+c.workers)
	cs, err := k.Up(ctx)
	if err != nil {
		return err
	}
	step("building the manager and job images and pushing them to %s/%s and %s/%s", reg.Addr(), upManagerProject, reg.Addr(), upTenantsProject)
	images, err := testbed.PushImagesTo(ctx, c.root, reg, upManagerProject, upTenantsProject, "dev", os.Stderr)
	if err != nil {
		return err
	}
	vals, err := (&values.Options{ValueFiles: c.valueFiles}).MergeValues(getter.All(cli.New()))
	if err != nil {
		return fmt.Errorf("reading values: %w", err)
	}
	registryValues(vals, reg, images, c.namespace)
	step("helm upgrade -i %s charts/platform-operators -n %s %s (image %s/%s@%s)", c.release, c.namespace, valuesArgs(c.valueFiles),
		images.Registry, images.ManagerRepository, images.ManagerDigest)
	if _, err := testbed.UpgradeInstall(testbed.Release{
		Name: c.release, Namespace: c.namespace, ChartDir: filepath.Join(c.root, "charts", "platform-operators"),
		Kubeconfig: k.Kubeconfig, Values: vals,
	}, nil); err != nil {
		return err
	}
	step("helm test %s --logs", c.release)
	rel, err := testbed.HelmTest(testbed.Release{Name: c.release, Namespace: c.namespace, Kubeconfig: k.Kubeconfig}, os.Stderr)
	if err != nil {
		return fmt.Errorf("helm test: %w", err)
	}
	pods, err := cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: upSelector})
	if err != nil {
		return err
	}
	var lines []string
	for _, p := range pods.Items {
		restarts := int32(0)
		for _, st := range p.Status.ContainerStatuses {
			restarts += st.RestartCount
		}
		lines = append(lines, fmt.Sprintf("    %s on %s: %s, %d restart(s)", p.Name, p.Spec.NodeName, p.Status.Phase, restarts))
	}
	fmt.Printf(`
Test bed is up in %s: kind cluster %q on real nodes, the manager in the cluster.
  admin kubeconfig:   %s
  registry:           %s (push: %s, password in %s), manager image under %s, job image under %s
                      pull-only: %s (the manager's pods), %s (spread to every namespace)
  helm test:          %s
  manager pods:
%s

Try:
  export KUBECONFIG=%s
  kubectl get nodes
  kubectl -n %s get deploy,pods,lease
  kubectl -n %s logs deploy/%s -f
  kubectl -n secretsync create secret generic shared --type=platform-operators.io/secretsync --from-literal=token=s3cr3t
  kubectl get secrets -A --field-selector metadata.name=shared; kubectl get secretsyncs
Stop it all with: make down
`, time.Since(start).Round(time.Second), c.cluster, k.Kubeconfig, reg.Addr(), reg.User, filepath.Join(reg.Dir, "password"),
		images.Registry, images.JobRegistry, upManagerRobot, upTenantsRobot, testPhase(rel), strings.Join(lines, "\n"), k.Kubeconfig, c.namespace, c.namespace, c.release)
	return nil
}

// registryValues points the chart at the test bed's registry: the manager image by digest (a new
// build rolls the pods) in project platform, the job image in project tenants, the manager's own
// pull secret (managerPullSecret: the account that may pull from platform only; its pods pull with
// it, never spread), and the tenants' pull secret (the account that may pull from tenants only) in
// the release namespace, which the manager's SecretSync spreads to every namespace's default
// ServiceAccount (tenant Jobs pull with it). Neither may push; the account that pushed the images
// stays out of the cluster. Since issue 28 the chart keeps the two apart: with pullSecret alone
// the manager's pods got no credentials and `make up` ended in ImagePullBackOff.
func registryValues(vals map[string]any, reg testbed.Registry, images testbed.PushedImages, namespace string) {
	manager, tenants := account(reg, upManagerRobot), account(reg, upTenantsRobot)
	vals["image"] = map[string]any{"registry": images.Registry, "repository": images.ManagerRepository, "digest": images.ManagerDigest}
	vals["jobImage"] = map[string]any{"registry": images.JobRegistry, "repository": images.JobRepository, "tag": images.JobTag}
	vals["pullSecret"] = map[string]any{"create": true, "name": "registry-pull", "namespace": namespace,
		"registry": reg.Addr(), "username": tenants.User, "password": tenants.Password, "sync": map[string]any{"enabled": true}}
	vals["managerPullSecret"] = map[string]any{"create": true, "registry": reg.Addr(), "username": manager.User, "password": manager.Password}
	if _, ok := vals["replicaCount"]; !ok {
		vals["replicaCount"] = 2
	}
}

func testPhase(rel *release.Release) string {
	var out []string
	for _, h := range rel.Hooks {
		for _, ev := range h.Events {
			if ev == release.HookTest {
				out = append(out, h.Name+" "+string(h.LastRun.Phase))
			}
		}
	}
	return strings.Join(out, ", ")
}

// downKind deletes `make up`'s kind cluster and stops its registry.
func downKind(ctx context.Context, c config) error {
	if _, err := os.Stat(filepath.Join(c.bin, "kind")); err != nil {
		return nil
	}
	if !testbed.DockerAnswers(ctx) {
		// No engine: no kind cluster can be running.
		return nil
	}
	step("deleting kind cluster %q", c.cluster)
	if err := c.kind("").Down(ctx); err != nil {
		return err
	}
	reg := testbed.Registry{Dir: filepath.Join(c.dir, "registry")}
	return reg.Stop()
}

// chartTesting runs `ct install` on a one-node kind cluster (the manager image loaded with kind
// load; ct installs the chart once per ci/ values file, runs helm test and uninstalls), then
// installs the chart of git revision --upgrade-from and upgrades it to the working tree's chart,
// checking the manager stays available and helm test passes. The cluster is deleted at the end.
func chartTesting(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp("", "po-ct-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	k := testbed.Kind{Name: "po-ct", Root: c.root, Kubeconfig: filepath.Join(dir, "kubeconfig"), Out: os.Stderr}
	if err := k.Down(ctx); err != nil {
		return err
	}
	step("kind cluster %q", k.Name)
	cs, err := k.Up(ctx)
	if err != nil {
		return err
	}
	defer func() {
		step("deleting kind cluster %q", k.Name)
		if err := k.Down(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "testbed:", err)
		}
	}()
	const image = "platform-operators/manager:ct"
	tar := filepath.Join(dir, "manager.tar")
	step("make image-tar IMAGE=%s, kind load image-archive", image)
	mk := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", c.root, "image-tar", "IMAGE="+image, "IMAGE_TAR="+tar)
	mk.Stdout, mk.Stderr = os.Stderr, os.Stderr
	if err := mk.Run(); err != nil {
		return fmt.Errorf("make image-tar: %w", err)
	}
	if err := k.LoadImageArchive(ctx, tar); err != nil {
		return err
	}
	repo, tag, _ := strings.Cut(image, ":")
	imageValues := map[string]any{"registry": "", "repository": repo, "tag": tag, "pullPolicy": "Never"}

	step("ct install --config ct.yaml --charts charts/platform-operators")
	ct := exec.CommandContext(ctx, filepath.Join(c.bin, "ct"), "install", "--config", filepath.Join(c.root, "ct.yaml"),
		"--charts", filepath.Join(c.root, "charts", "platform-operators"),
		"--helm-extra-set-args", fmt.Sprintf("--set=image.registry=,image.repository=%s,image.tag=%s,image.pullPolicy=Never", repo, tag))
	ct.Dir = c.root
	ct.Env = append(os.Environ(), "KUBECONFIG="+k.Kubeconfig, "PATH="+c.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ct.Stdout, ct.Stderr = os.Stdout, os.Stderr
	if err := ct.Run(); err != nil {
		return fmt.Errorf("ct install: %w", err)
	}
	if c.upgradeFrom == "" {
		return nil
	}
	return upgradeFromRevision(ctx, c, k, cs, dir, imageValues)
}

// upgradeFromRevision installs the release as a user has it at git revision c.upgradeFrom (that
// revision's chart with the manager image built from that revision's code), then upgrades it to the
// working tree's chart and image as docs/upgrade.md tells users to: `helm upgrade
// --reset-then-reuse-values`, only the image given again. The old chart never runs the new image: a
// newer manager may need RBAC or CRDs the old chart lacks. After the upgrade the values set at
// install must still hold, the manager pods run the new image, Ready and without a restart, and
// every object of the new release is in the cluster.
func upgradeFromRevision(ctx context.Context, c config, k testbed.Kind, cs kubernetes.Interface, dir string, image map[string]any) error {
	old := filepath.Join(dir, "previous")
	if err := os.MkdirAll(old, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", c.root, c.upgradeFrom, old)
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", c.upgradeFrom, err, out)
	}
	const oldImage = "platform-operators/manager:previous"
	tar := filepath.Join(dir, "previous.tar")
	step("make image-tar at %s (IMAGE=%s), kind load image-archive", c.upgradeFrom, oldImage)
	mk := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", old, "image-tar", "IMAGE="+oldImage, "IMAGE_TAR="+tar,
		"BIN="+filepath.Join(old, "bin"), "VERSION="+c.upgradeFrom, "COMMIT="+c.upgradeFrom)
	mk.Stdout, mk.Stderr = os.Stderr, os.Stderr
	if err := mk.Run(); err != nil {
		return fmt.Errorf("make image-tar at %s: %w", c.upgradeFrom, err)
	}
	if err := k.LoadImageArchive(ctx, tar); err != nil {
		return err
	}
	repo, tag, _ := strings.Cut(oldImage, ":")
	previousImage := map[string]any{"registry": "", "repository": repo, "tag": tag, "pullPolicy": "Never"}
	// Named as the chart, so the Deployment is named the same (its full name).
	const ns, name = "po-upgrade", "platform-operators"
	vals := func(image map[string]any) map[string]any {
		// The secretsync namespace is there already (kept by the ct installs); the chart at an
		// older revision would try to take it over.
		return map[string]any{"image": image, "replicaCount": 2, "crds": map[string]any{"keep": false},
			"secretSync": map[string]any{"default": map[string]any{"createSourceNamespace": false}}}
	}
	r := testbed.Release{Name: name, Namespace: ns, Kubeconfig: k.Kubeconfig}
	r.ChartDir, r.Values = filepath.Join(old, "charts", "platform-operators"), vals(previousImage)
	step("helm upgrade -i %s: the chart at %s", name, c.upgradeFrom)
	if _, err := testbed.UpgradeInstall(r, nil); err != nil {
		return err
	}
	before, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	r.ChartDir, r.Values, r.ResetThenReuseValues = filepath.Join(c.root, "charts", "platform-operators"), map[string]any{"image": image}, true
	step("helm upgrade %s --reset-then-reuse-values --set image...: the working tree's chart and image", name)
	rel, err := testbed.UpgradeInstall(r, nil)
	if err != nil {
		return fmt.Errorf("upgrading from the chart at %s: %w", c.upgradeFrom, err)
	}
	after, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if before.UID != after.UID {
		return fmt.Errorf("the upgrade replaced the Deployment (uid %s -> %s)", before.UID, after.UID)
	}
	// replicaCount 2 was set at install only: the upgrade reused it.
	if want := int32(2); after.Spec.Replicas == nil || *after.Spec.Replicas != want || after.Status.ReadyReplicas != want || after.Status.UpdatedReplicas != want {
		return fmt.Errorf("after the upgrade the Deployment has %v replicas, %d ready, %d updated; want %d of each (replicaCount set at install)",
			after.Spec.Replicas, after.Status.ReadyReplicas, after.Status.UpdatedReplicas, want)
	}
	if err := upgradedManagerPods(ctx, cs, ns, int(*after.Spec.Replicas), image); err != nil {
		return err
	}
	objects, err := testbed.CheckReleaseObjects(r, rel)
	if err != nil {
		return fmt.Errorf("after the upgrade: %w", err)
	}
	step("helm test %s --logs after the upgrade", name)
	tested, err := testbed.HelmTest(r, os.Stdout)
	if err != nil {
		return fmt.Errorf("helm test after the upgrade: %w", err)
	}
	fmt.Printf("upgrade from %s (--reset-then-reuse-values): Deployment kept (uid %s), %d/%d replicas ready without a restart, %d objects of the release present, helm test: %s\n",
		c.upgradeFrom, after.UID, after.Status.ReadyReplicas, *after.Spec.Replicas, objects, testPhase(tested))
	return nil
}

// upgradedManagerPods checks the manager pods left after an upgrade: want of them, each running
// image, Ready, and no container restarted.
func upgradedManagerPods(ctx context.Context, cs kubernetes.Interface, ns string, want int, image map[string]any) error {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: upSelector})
	if err != nil {
		return err
	}
	wantImage := fmt.Sprintf("%s:%s", image["repository"], image["tag"])
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue // an old replica still terminating
		}
		n++
		if len(p.Spec.Containers) == 0 || p.Spec.Containers[0].Image != wantImage {
			return fmt.Errorf("after the upgrade pod %s runs %v, want %s", p.Name, p.Spec.Containers, wantImage)
		}
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		if !ready {
			return fmt.Errorf("after the upgrade pod %s is not Ready", p.Name)
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.RestartCount != 0 {
				return fmt.Errorf("after the upgrade container %s of pod %s restarted %d time(s)", st.Name, p.Name, st.RestartCount)
			}
		}
	}
	if n != want {
		return fmt.Errorf("after the upgrade %d manager pods, want %d", n, want)
	}
	return nil
}
