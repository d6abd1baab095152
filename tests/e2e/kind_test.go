package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

const (
	kindCluster = "po-e2e"
	// kindRegistryPort keeps the suite's registry apart from `make up`'s (5000).
	kindRegistryPort = 5001
	// kindImageTag is the tag the suite pushes the manager image under.
	kindImageTag = "e2e"
	// managerSelector selects the chart's manager pods (what its Services select).
	managerSelector = "app.kubernetes.io/name=platform-operators,app.kubernetes.io/component=manager,app.kubernetes.io/instance=" + releaseName
)

// kindProvider runs the suite on real nodes: a kind cluster on the node image built here
// (scripts/kind-node.sh; nothing is pulled), a registry with credentials in Harbor's role, the
// manager image and the job image pushed there and pulled by the nodes through the chart's
// image.registry and pull secret, and the manager running in the cluster, 2 replicas with leader
// election, as a user's `helm upgrade -i` runs it. The cluster is e2e-framework's: testbed.Kind is
// a cluster provider (kind's Go API), created by envfuncs.CreateClusterWithConfig and deleted by
// envfuncs.DestroyCluster. KIND_WORKERS sets the worker count (default 2: replicas on different
// nodes, and a node to drain); KIND_NODE_IMAGE a node image to use instead of building ours (e.g.
// kindest/node where it can be pulled).
type kindProvider struct {
	dir      string
	cluster  *testbed.Kind
	registry testbed.Registry
	images   testbed.PushedImages
	// prober asks every manager pod's /readyz every 0.5 s from the install to the end.
	prober *readyzProber
}

func kindWorkers() int {
	n := 2
	if v := os.Getenv("KIND_WORKERS"); v != "" {
		_, _ = fmt.Sscan(v, &n)
	}
	return n
}

func newKindProvider() (*kindProvider, error) {
	dir, err := os.MkdirTemp("", "po-e2e-kind-")
	if err != nil {
		return nil, err
	}
	// Images first: the chart is then installed the moment the cluster answers (Early), before
	// kube-proxy and CoreDNS are up, as a user who installs right after `kind create cluster` does.
	return &kindProvider{dir: dir, cluster: &testbed.Kind{Name: kindCluster, Root: root, Workers: kindWorkers(),
		Kubeconfig: filepath.Join(dir, "kubeconfig"), Out: os.Stderr, Early: true}}, nil
}

// kindConfig is the kind configuration the cluster is created with (testbed.Kind.Config: the API
// server's admission plugins, the registry as a plain-HTTP mirror, the nodes), written by
// startRegistry once the registry's address is known.
func (p *kindProvider) kindConfig() string { return filepath.Join(p.dir, "kind.yaml") }

func (p *kindProvider) Setup(values map[string]any) []env.Func {
	return []env.Func{
		p.startRegistry,
		envfuncs.CreateClusterWithConfig(p.cluster, kindCluster, p.kindConfig(), testbed.WithNodeImage(os.Getenv("KIND_NODE_IMAGE"))),
		func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
			return p.install(ctx, cfg, values)
		},
		// The suite's kubectl image (realpods_test.go), built in startRegistry.
		func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
			return envfuncs.LoadImageToCluster(kindCluster, toolsImage)(ctx, cfg)
		},
	}
}

// startRegistry starts the registry, pushes the manager and job images into it, builds the tools
// image and writes the kind configuration.
func (p *kindProvider) startRegistry(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	gw, err := testbed.DockerBridgeGateway(ctx)
	if err != nil {
		return ctx, err
	}
	p.registry = testbed.Registry{Dir: filepath.Join(p.dir, "registry"), Host: gw, Port: kindRegistryPort, User: e2eRobot, Password: e2eRobotSecret}
	if err := p.registry.Start(ctx); err != nil {
		return ctx, err
	}
	images, err := testbed.PushImages(ctx, root, p.registry, "platform", kindImageTag, os.Stderr)
	if err != nil {
		return ctx, err
	}
	if toolsImage, err = testbed.ToolsImage(ctx, root); err != nil {
		return ctx, err
	}
	reg := p.registry
	p.images = images
	valueOverrides = append(valueOverrides, func(v map[string]any) { setKindValues(v, reg, images) })
	p.cluster.Registry = reg.Addr()
	// A cluster left by an interrupted run would hold an old registry address: start afresh.
	if err := p.cluster.Destroy(ctx); err != nil {
		return ctx, err
	}
	return ctx, os.WriteFile(p.kindConfig(), []byte(p.cluster.Config()), 0o644)
}

// install installs the chart into the new cluster with the registry's values, with the /readyz
// prober running from the start, then waits for the Service VIP and DNS the suite's own pods need.
func (p *kindProvider) install(ctx context.Context, cfg *envconf.Config, values map[string]any) (context.Context, error) {
	setKindValues(values, p.registry, p.images)
	if err := createRBACNamespaces(ctx, cfg, values); err != nil {
		return ctx, err
	}
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return ctx, err
	}
	// Probing starts with the install: a replica that restarts or flaps on the way up counts.
	p.prober = startReadyzProber(cs)
	_, err = testbed.UpgradeInstall(testbed.Release{
		Name: releaseName, Namespace: releaseNamespace, ChartDir: filepath.Join(root, "charts", "platform-operators"),
		Kubeconfig: cfg.KubeconfigFile(), Values: values,
	}, nil)
	if err != nil {
		return ctx, err
	}
	// The suite's own pods wait for what the manager did not: the Service VIP and DNS.
	return ctx, testbed.WaitClusterReady(ctx, cs, 3*time.Minute)
}

// setKindValues points the suite's values at the test bed's registry: the manager image and the
// job image come from it, pulled with the chart's pull secret (a Harbor-style robot account),
// which the manager's SecretSync spreads to every namespace's default ServiceAccount.
func setKindValues(values map[string]any, reg testbed.Registry, images testbed.PushedImages) {
	e2eRegistry = reg.Addr()
	chartJobImage = images.Job
	e2eStorageProvisioner = "kubernetes.io/host-path"
	values["image"] = map[string]any{"registry": images.Registry, "repository": images.ManagerRepository,
		"tag": images.ManagerTag, "pullPolicy": "IfNotPresent"}
	values["jobImage"] = map[string]any{"registry": images.Registry, "repository": images.JobRepository, "tag": images.JobTag}
	// Two replicas and a PDB (minAvailable 1) are the chart's defaults, which the suite relies on
	// (the drain in ha_test.go): they are not set here, so a change of default shows.
	if ps, ok := values["pullSecret"].(map[string]any); ok {
		ps["registry"] = reg.Addr()
	}
	// The manager's pods pull with a credential of their own, which the chart never spreads (the
	// spread pull secret above is the tenants'). The test bed's registry has one account, so both
	// carry it here; on Harbor they are two robot accounts (docs/chart.md).
	values["managerPullSecret"] = map[string]any{"create": true, "registry": reg.Addr(), "username": e2eRobot, "password": e2eRobotSecret}
	if sc, ok := values["storageClass"].(map[string]any); ok {
		sc["provisioner"] = e2eStorageProvisioner
		delete(sc, "parameters")
	}
}

func (p *kindProvider) Finish() []env.Func {
	return []env.Func{
		func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
			if p.prober != nil {
				p.prober.Stop()
			}
			return ctx, nil
		},
		envfuncs.DestroyCluster(kindCluster),
		p.cleanup,
	}
}

// cleanup stops the registry and removes the work dir, and deletes the cluster when a failed
// Setup left it out of the context (DestroyCluster then found none).
func (p *kindProvider) cleanup(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	err := p.cluster.Destroy(ctx)
	if rerr := p.registry.Stop(); err == nil {
		err = rerr
	}
	if err == nil {
		err = os.RemoveAll(p.dir)
	}
	return ctx, err
}

func (p *kindProvider) ExportLogs(ctx context.Context, cfg *envconf.Config, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(p.registry.Dir, "registry.log")); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "registry.log"), b, 0o644)
	}
	_, err := envfuncs.ExportClusterLogs(kindCluster, filepath.Join(dir, "cluster"))(ctx, cfg)
	return err
}

// managerPods lists the manager's pods, oldest first.
func managerPods(ctx context.Context, cs kubernetes.Interface) ([]corev1.Pod, error) {
	pods, err := cs.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: managerSelector})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	if len(out) == 0 {
		return nil, fmt.Errorf("no manager pod in %s", releaseNamespace)
	}
	return out, nil
}

// restartManager is `kubectl rollout restart deployment/platform-operators` and the wait for it:
// every replica a new pod, Ready, every old pod gone (a terminating one may still lead while it
// drains), and a new pod holding the leader Lease. Tests time what the new leader does (the key
// tests: the key ring it read at start), not the handover (docs/reliability.md measures that), so
// the handover's length is logged: longer than the chart's leaseDuration means the old leader
// did not release the Lease. Every rollout of the suite waits in waitForRollout.
func restartManager(ctx context.Context, t *testing.T, c client.Client, cs kubernetes.Interface) {
	t.Helper()
	oldNames := currentManagerPods(ctx, t, cs)
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := cs.AppsV1().Deployments(releaseNamespace).Patch(ctx, releaseName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRollout(ctx, t, c, cs, oldNames, time.Now())
}

// currentManagerPods names the manager pods that are not being deleted, before a rollout.
func currentManagerPods(ctx context.Context, t *testing.T, cs kubernetes.Interface) map[string]bool {
	t.Helper()
	old, err := managerPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	oldNames := map[string]bool{}
	for _, p := range old {
		oldNames[p.Name] = true
	}
	return oldNames
}

// waitForRollout waits, from start, until every replica is a new pod (not in oldNames) and Ready,
// every old pod is gone and a new pod holds the leader Lease; it logs how long each took.
func waitForRollout(ctx context.Context, t *testing.T, c client.Client, cs kubernetes.Interface, oldNames map[string]bool, start time.Time) {
	t.Helper()
	waitFor(ctx, t, 3*waitTimeout, "the manager's rollout never finished", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(releaseNamespace).Get(ctx, releaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want || d.Status.Replicas != want {
			return false, nil
		}
		pods, err := managerPods(ctx, cs)
		if err != nil || int32(len(pods)) != want {
			return false, nil
		}
		for _, p := range pods {
			if oldNames[p.Name] || !podReady(p) {
				return false, nil
			}
		}
		return true, nil
	})
	rolled := time.Since(start)
	if err := wait.PollUntilContextTimeout(ctx, pollInterval, 3*waitTimeout, true, func(ctx context.Context) (bool, error) {
		all, err := cs.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: managerSelector})
		if err != nil {
			return false, nil
		}
		for _, p := range all.Items {
			if oldNames[p.Name] {
				return false, nil
			}
		}
		leader, err := leaderPod(ctx, cs)
		return err == nil && !oldNames[leader.Name], nil
	}); err != nil {
		t.Fatalf("%s after the rollout, the old manager pods were not all gone or no new pod held the leader Lease (%s): %v", time.Since(start).Round(time.Second), leaseState(ctx, c), err)
	}
	t.Logf("manager rolled out: new pods Ready %s, old pods gone and a new leader %s after the restart (%s)", rolled.Round(time.Second), time.Since(start).Round(time.Second), leaseState(ctx, c))
}

// leaseState describes the leader Lease for a log line: holder, acquired and renewed.
func leaseState(ctx context.Context, c client.Client) string {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: releaseNamespace, Name: releaseName}, l); err != nil {
		return fmt.Sprintf("Lease unreadable: %v", err)
	}
	at := func(t *metav1.MicroTime) string {
		if t == nil {
			return "never"
		}
		return time.Since(t.Time).Round(100*time.Millisecond).String() + " ago"
	}
	return fmt.Sprintf("Lease held by %q, acquired %s, renewed %s, %d transitions", ptr.Deref(l.Spec.HolderIdentity, ""), at(l.Spec.AcquireTime), at(l.Spec.RenewTime), ptr.Deref(l.Spec.LeaseTransitions, 0))
}

// leaderPod returns the manager pod that holds the leader Lease.
func leaderPod(ctx context.Context, cs kubernetes.Interface) (*corev1.Pod, error) {
	pods, err := managerPods(ctx, cs)
	if err != nil {
		return nil, err
	}
	lease, err := cs.CoordinationV1().Leases(releaseNamespace).Get(ctx, releaseName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	for i := range pods {
		if strings.HasPrefix(holder, pods[i].Name+"_") {
			return &pods[i], nil
		}
	}
	return nil, fmt.Errorf("no manager pod holds the lease (holder %q)", holder)
}

func podLogs(ctx context.Context, cs kubernetes.Interface, namespace, pod, container string) (string, error) {
	rc, err := cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// leader returns a clientset and the manager pod that holds the lease.
func leader(ctx context.Context, cfg *envconf.Config) (kubernetes.Interface, *corev1.Pod, error) {
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return nil, nil, err
	}
	pod, err := leaderPod(ctx, cs)
	return cs, pod, err
}

// ManagerLogs returns the leader's log (the replica that runs the controllers).
func (p *kindProvider) ManagerLogs(ctx context.Context, cfg *envconf.Config) (string, error) {
	cs, pod, err := leader(ctx, cfg)
	if err != nil {
		return "", err
	}
	return podLogs(ctx, cs, releaseNamespace, pod.Name, "manager")
}

// ManagerMetrics returns the leader's /metrics as Prometheus reads it: HTTPS with the token of a
// ServiceAccount bound to the chart's metrics-reader ClusterRole, through a port-forward (the API
// server's pod proxy does not pass a bearer token on; see metrics_test.go).
func (p *kindProvider) ManagerMetrics(ctx context.Context, cfg *envconf.Config) (string, error) {
	cs, pod, err := leader(ctx, cfg)
	if err != nil {
		return "", err
	}
	token, err := metricsToken(ctx, cs, metricsScraper, true)
	if err != nil {
		return "", err
	}
	// A port-forward stream now and then breaks, and a fresh binding may take a moment: ask again.
	var body string
	var code int
	// Three attempts, 0.5 s then 1 s apart.
	werr := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 3}, func(ctx context.Context) (bool, error) {
		code, body, err = getPodMetrics(ctx, cfg.Client().RESTConfig(), *pod, token)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET /metrics of %s: %d %.200s", pod.Name, code, body)
		}
		return err == nil, nil
	})
	if err == nil && werr != nil {
		err = werr // ctx ended before the first attempt
	}
	return body, err
}

// ManagerReady reports whether every manager pod is Ready.
func (p *kindProvider) ManagerReady(ctx context.Context, cfg *envconf.Config) (bool, error) {
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return false, err
	}
	pods, err := managerPods(ctx, cs)
	if err != nil {
		return false, nil
	}
	for _, pod := range pods {
		if !podReady(pod) {
			return false, nil
		}
	}
	return true, nil
}

func podReady(pod corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (p *kindProvider) LeaseHolderPrefix(ctx context.Context, cfg *envconf.Config) (string, error) {
	_, pod, err := leader(ctx, cfg)
	if err != nil {
		return "", err
	}
	return pod.Name + "_", nil
}

// containerPort returns the number of the pod's container port with that name. The API server's
// pod proxy is given the number: kube-apiserver v1.36.3 panics on a named port
// (proxy.normalizeLocation on a nil URL; the client sees HTTP/2 INTERNAL_ERROR).
func containerPort(pod corev1.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return strconv.Itoa(int(p.ContainerPort))
			}
		}
	}
	return name
}
