package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindversion "sigs.k8s.io/kind/pkg/cmd/kind/version"
	kindexec "sigs.k8s.io/kind/pkg/exec"
	kindlog "sigs.k8s.io/kind/pkg/log"
)

// Kind is a kind cluster on the node image the project builds here (scripts/kind-node.sh): real
// nodes (containers running systemd, containerd and the kubelet) that run real pods. It is created,
// deleted and read through kind's Go API (sigs.k8s.io/kind/pkg/cluster, at the version
// scripts/versions.env pins for bin/kind and the node image's base files), not the kind binary.
//
// *Kind is an e2e-framework cluster provider (support.E2EClusterProviderWithImageLoader), so a
// suite uses it as any other provider:
//
//	testenv.Setup(envfuncs.CreateClusterWithConfig(&testbed.Kind{Root: root, ...}, "po-e2e", configFile,
//		testbed.WithNodeImage(image)))
//	testenv.Finish(envfuncs.DestroyCluster("po-e2e"))
//
// and envfuncs.LoadImageToCluster, envfuncs.LoadImageArchiveToCluster and
// envfuncs.ExportClusterLogs work on it. Up and Down are the same steps for the commands that are
// not e2e-framework suites (make up, make test-ct, make chaos, the release test).
type Kind struct {
	// Name is the cluster's name.
	Name string
	// Root is the repository root: scripts/ and bin/ (the node image's inputs) live there.
	Root string
	// Workers is the number of worker nodes besides the control plane: 0 (one node that runs
	// everything) or more (the control plane is then tainted as usual).
	Workers int
	// Kubeconfig is where the admin kubeconfig is written (a temporary file when empty). kind is
	// always given it, so it never touches ~/.kube/config.
	Kubeconfig string
	// Registry is host:port of a plain-HTTP registry the nodes' containerd may pull from (Harbor's
	// role in the test bed); empty for none.
	Registry string
	// Out receives the progress of kind and the node image build; nil discards it.
	Out io.Writer
	// Image is a node image to use instead of building ours (e.g. upstream's kindest/node on a
	// machine that can pull it; KIND_NODE_IMAGE in the e2e suite). WithNodeImage sets it.
	Image string
	// Early makes Up (and WaitForControlPlane) return as soon as the API server answers and every
	// node has its pod routes, without waiting for kube-proxy and CoreDNS: what a user who installs
	// right after `kind create cluster` meets (the e2e suite installs so, and asserts no manager
	// restart).
	Early bool

	// version is what WithVersion asked for: kind's version is the one linked in (tests/go.mod).
	version string
	rest    *rest.Config
}

// Enforce the e2e-framework interfaces at compile time.
var _ support.E2EClusterProviderWithImageLoader = &Kind{}

// WithNodeImage is the node image option of the e2e-framework provider (what kind.WithImage is
// for e2e-framework's own kind provider): empty builds ours (scripts/kind-node.sh).
func WithNodeImage(image string) support.ClusterOpts {
	return func(c support.E2EClusterProvider) {
		if k, ok := c.(*Kind); ok {
			k.Image = image
		}
	}
}

func (k *Kind) out() io.Writer {
	if k.Out == nil {
		return io.Discard
	}
	return k.Out
}

// engineClient is Debian's docker client when it is installed: it speaks the API of the engine
// scripts/host.sh starts (a newer client elsewhere on PATH may not).
const engineClient = "/usr/bin/docker"

// dockerCmd runs the docker client that matches the engine.
func dockerCmd(ctx context.Context, args ...string) *exec.Cmd {
	bin := "docker"
	if _, err := os.Stat(engineClient); err == nil {
		bin = engineClient
	}
	return exec.CommandContext(ctx, bin, args...)
}

var engineOnPath sync.Once

// useEngineClient puts the engine's own client first on this process's PATH: kind's Go API runs
// `docker` by name (bin/ of make's PATH has a newer one). Once per process, before the first call
// into kind.
func (k *Kind) useEngineClient() {
	engineOnPath.Do(func() {
		if _, err := os.Stat(engineClient); err != nil {
			return
		}
		shim := filepath.Join(Bin(k.Root), "docker-client")
		if err := os.MkdirAll(shim, 0o755); err != nil {
			return
		}
		// A new link renamed over the old one: suites run at the same time (make test's lanes)
		// never see the shim without its docker.
		tmp := filepath.Join(shim, fmt.Sprintf(".docker.%d", os.Getpid()))
		_ = os.Remove(tmp)
		if os.Symlink(engineClient, tmp) == nil {
			_ = os.Rename(tmp, filepath.Join(shim, "docker"))
		}
		_ = os.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	})
}

// provider is kind's cluster provider on Docker, logging to Out.
func (k *Kind) provider() *cluster.Provider {
	k.useEngineClient()
	return cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindLogger{w: k.out()}))
}

// NodeImage builds the node image, or finds it already built, and returns its tag.
func (k *Kind) NodeImage(ctx context.Context) (string, error) {
	c := exec.CommandContext(ctx, filepath.Join(k.Root, "scripts", "kind-node.sh"))
	c.Stderr = k.out()
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/kind-node.sh: %w", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return "", fmt.Errorf("scripts/kind-node.sh printed no image")
	}
	return lines[len(lines)-1], nil
}

// Exists reports whether kind knows the cluster.
func (k *Kind) Exists(context.Context) (bool, error) {
	names, err := k.provider().List()
	if err != nil {
		return false, fmt.Errorf("listing kind clusters: %w", err)
	}
	return slices.Contains(names, k.Name), nil
}

// Config is the kind cluster configuration.
func (k *Kind) Config() string {
	var b strings.Builder
	b.WriteString(`kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  # No kindnetd image here: each node's po-podnet unit writes a bridge CNI config for its podCIDR,
  # and Up routes the podCIDRs between nodes.
  disableDefaultCNI: true
  kubeProxyMode: iptables
kubeadmConfigPatches:
- |
  # This VM runs cgroup v1; the kubelet refuses it from 1.35 on unless told otherwise.
  kind: KubeletConfiguration
  failCgroupV1: false
- |
  # OpenShift's admission: an ownerReference with blockOwnerDeletion needs update on the owner's
  # finalizers (issue 29: without the RBAC for it no At or ScheduledJob could create a Job there).
  # NodeRestriction is kubeadm's default, which this list replaces.
  kind: ClusterConfiguration
  apiServer:
    extraArgs:
      enable-admission-plugins: NodeRestriction,OwnerReferencesPermissionEnforcement
`)
	if k.Registry != "" {
		fmt.Fprintf(&b, `containerdConfigPatches:
- |-
  # The test bed's registry speaks plain HTTP.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."%[1]s"]
    endpoint = ["http://%[1]s"]
`, k.Registry)
	}
	b.WriteString("nodes:\n- role: control-plane\n")
	for range k.Workers {
		b.WriteString("- role: worker\n")
	}
	return b.String()
}

// Up creates the cluster, or reuses it when it exists (a second `make up` is safe), writes its
// kubeconfig and waits until it can run pods: every node Ready, pod routes between nodes,
// kube-proxy and CoreDNS ready, and the default ServiceAccount there (only the routes with Early).
// kind's own wait covers only the nodes; a pod started before kube-proxy programmed the Service VIP
// cannot reach the API.
func (k *Kind) Up(ctx context.Context) (*kubernetes.Clientset, error) {
	if _, err := k.CreateWithConfig(ctx, ""); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(k.rest)
	if err != nil {
		return nil, err
	}
	return cs, k.waitUsable(ctx, cs)
}

// create creates the cluster from configFile (empty: Config()) or, when it exists, writes its
// kubeconfig; either way Kubeconfig then reaches it.
func (k *Kind) create(ctx context.Context, configFile string) error {
	if k.Name == "" {
		return errors.New("kind cluster without a name")
	}
	if k.version != "" && strings.TrimPrefix(k.version, "v") != strings.TrimPrefix(kindversion.Version(), "v") {
		return fmt.Errorf("kind %s asked for, but kind's Go API is linked at %s (tests/go.mod)", k.version, kindversion.Version())
	}
	if k.Kubeconfig == "" {
		f, err := os.CreateTemp("", "kind-"+k.Name+"-kubeconfig-")
		if err != nil {
			return err
		}
		f.Close()
		k.Kubeconfig = f.Name()
	}
	p := k.provider()
	exists, err := k.Exists(ctx)
	if err != nil {
		return err
	}
	if exists {
		if err := p.ExportKubeConfig(k.Name, k.Kubeconfig, false); err != nil {
			return fmt.Errorf("writing the kubeconfig of kind cluster %s: %w", k.Name, withCommandOutput(err))
		}
	} else {
		image := k.Image
		if image == "" {
			if image, err = k.NodeImage(ctx); err != nil {
				return err
			}
		}
		config := cluster.CreateWithRawConfig([]byte(k.Config()))
		if configFile != "" {
			config = cluster.CreateWithConfigFile(configFile)
		}
		unlock, err := lockKindNetwork()
		if err != nil {
			return err
		}
		err = p.Create(k.Name, config, cluster.CreateWithNodeImage(image), cluster.CreateWithKubeconfigPath(k.Kubeconfig),
			cluster.CreateWithWaitForReady(3*time.Minute), cluster.CreateWithDisplayUsage(false), cluster.CreateWithDisplaySalutation(false))
		unlock()
		if err != nil {
			return fmt.Errorf("creating kind cluster %s: %w", k.Name, withCommandOutput(err))
		}
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		return err
	}
	k.rest = restCfg
	return nil
}

// waitUsable routes the podCIDRs between the nodes and, unless Early, waits for WaitClusterReady.
func (k *Kind) waitUsable(ctx context.Context, cs kubernetes.Interface) error {
	if err := k.routePodCIDRs(ctx, cs); err != nil {
		return err
	}
	if k.Early {
		return nil
	}
	return WaitClusterReady(ctx, cs, 3*time.Minute)
}

// routePodCIDRs adds, on every node, a route to every other node's podCIDR through that node (what
// kindnetd would do). It runs outside the nodes: a node may read only its own Node object.
func (k *Kind) routePodCIDRs(ctx context.Context, cs kubernetes.Interface) error {
	var nodes []corev1.Node
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != 1+k.Workers {
			return false, nil
		}
		for _, n := range l.Items {
			if n.Spec.PodCIDR == "" {
				return false, nil
			}
		}
		nodes = l.Items
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d nodes with a podCIDR: %w", 1+k.Workers, err)
	}
	for _, n := range nodes {
		for _, m := range nodes {
			if n.Name == m.Name {
				continue
			}
			ip := internalIP(m)
			c := dockerCmd(ctx, "exec", n.Name, "ip", "route", "replace", m.Spec.PodCIDR, "via", ip)
			if out, err := c.CombinedOutput(); err != nil {
				return fmt.Errorf("route %s via %s on %s: %w: %s", m.Spec.PodCIDR, ip, n.Name, err, out)
			}
		}
	}
	return nil
}

func internalIP(n corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// WaitClusterReady waits until every node is Ready, kube-proxy runs on every node, CoreDNS is
// available and the default ServiceAccount exists.
func WaitClusterReady(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, n := range nodes.Items {
			if !nodeReady(n) {
				last = "node " + n.Name + " not Ready"
				return false, nil
			}
		}
		ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
		if err != nil || ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
			last = "kube-proxy not ready on every node"
			return false, nil
		}
		dep, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil || !deploymentAvailable(dep) {
			last = "CoreDNS not available"
			return false, nil
		}
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			last = "no default ServiceAccount yet"
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("cluster not ready after %s (%s): %w", timeout, last, err)
	}
	return nil
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// LoadImageArchive loads a `docker save` tarball into every node (kind load image-archive); no
// argument besides the archive is taken.
func (k *Kind) LoadImageArchive(_ context.Context, tar string, args ...string) error {
	if len(args) > 0 {
		return fmt.Errorf("kind cluster %s: LoadImageArchive takes no arguments, got %q", k.Name, args)
	}
	nodes, err := k.provider().ListInternalNodes(k.Name)
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		return fmt.Errorf("no nodes in kind cluster %s", k.Name)
	}
	var g errgroup.Group
	for _, n := range nodes {
		g.Go(func() error {
			f, err := os.Open(tar)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := nodeutils.LoadImageArchive(n, f); err != nil {
				return fmt.Errorf("loading %s into %s: %w", tar, n, withCommandOutput(err))
			}
			return nil
		})
	}
	return g.Wait()
}

// LoadImage copies a local Docker image into every node of the cluster (kind load docker-image).
func (k *Kind) LoadImage(ctx context.Context, image string, args ...string) error {
	dir, err := os.MkdirTemp("", "kind-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tar := filepath.Join(dir, "image.tar")
	if out, err := dockerCmd(ctx, "save", "-o", tar, image).CombinedOutput(); err != nil {
		return fmt.Errorf("docker save %s: %w: %s", image, err, out)
	}
	return k.LoadImageArchive(ctx, tar, args...)
}

// ExportLogs writes the nodes' logs (kubelet, containerd, pods) into dir (kind export logs).
func (k *Kind) ExportLogs(_ context.Context, dir string) error {
	return k.provider().CollectLogs(k.Name, dir)
}

// Down deletes the cluster; one that does not exist is not an error. The kind Docker network is
// removed too once no container uses it.
func (k *Kind) Down(ctx context.Context) error {
	exists, err := k.Exists(ctx)
	if err != nil {
		return err
	}
	if exists {
		if err := k.provider().Delete(k.Name, k.Kubeconfig); err != nil {
			return fmt.Errorf("deleting kind cluster %s: %w", k.Name, withCommandOutput(err))
		}
	}
	unlock, err := lockKindNetwork()
	if err != nil {
		return err
	}
	defer unlock()
	out, err := dockerCmd(ctx, "network", "inspect", "kind", "-f", "{{len .Containers}}").Output()
	if err == nil && strings.TrimSpace(string(out)) == "0" {
		_ = dockerCmd(ctx, "network", "rm", "kind").Run()
	}
	return nil
}

// The e2e-framework provider (support.E2EClusterProvider).

// SetDefaults is the provider's first step; Kind's zero values are its defaults.
func (k *Kind) SetDefaults() support.E2EClusterProvider { return k }

// WithName sets the cluster's name.
func (k *Kind) WithName(name string) support.E2EClusterProvider { k.Name = name; return k }

// WithVersion names the kind version the suite expects: Create fails when it is not the one
// linked in (kind's Go API is a Go dependency, pinned in tests/go.mod, not a binary to fetch).
func (k *Kind) WithVersion(version string) support.E2EClusterProvider { k.version = version; return k }

// WithPath is the kind binary for e2e-framework's own provider; this one runs none, so it is
// ignored.
func (k *Kind) WithPath(string) support.E2EClusterProvider { return k }

// WithOpts applies opts (WithNodeImage).
func (k *Kind) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(k)
	}
	return k
}

// Create creates the cluster from Config(), or reuses it when it exists, and returns the path of
// its kubeconfig. The kind CLI's flags are fields of Kind here: args must be empty.
func (k *Kind) Create(ctx context.Context, args ...string) (string, error) {
	if len(args) > 0 {
		return "", fmt.Errorf("kind cluster %s: Create takes no kind CLI arguments (set Kind's fields), got %q", k.Name, args)
	}
	return k.CreateWithConfig(ctx, "")
}

// CreateWithConfig creates the cluster from the kind configuration in configFile (empty:
// Config()), or reuses it when it exists, and returns the path of its kubeconfig.
func (k *Kind) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	if err := k.create(ctx, configFile); err != nil {
		return "", err
	}
	return k.Kubeconfig, nil
}

// GetKubeconfig is the path of the cluster's kubeconfig.
func (k *Kind) GetKubeconfig() string { return k.Kubeconfig }

// GenerateKubeconfig writes the cluster's kubeconfig (as `kind get kubeconfig` prints it, or with
// "--internal" the one for use inside the kind network) into a new file and returns its path.
func (k *Kind) GenerateKubeconfig(args ...string) (string, error) {
	internal := false
	for _, a := range args {
		if a != "--internal" {
			return "", fmt.Errorf("kind cluster %s: GenerateKubeconfig takes only --internal, got %q", k.Name, a)
		}
		internal = true
	}
	cfg, err := k.provider().KubeConfig(k.Name, internal)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "kind-"+k.Name+"-kubeconfig-")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(cfg); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// GetKubectlContext is the context kind names in the kubeconfig.
func (k *Kind) GetKubectlContext() string { return "kind-" + k.Name }

// Destroy deletes the cluster (Down).
func (k *Kind) Destroy(ctx context.Context) error { return k.Down(ctx) }

// WaitForControlPlane is what envfuncs.CreateCluster* waits for after Create: the routes between
// the nodes' podCIDRs and, unless Early, kube-proxy, CoreDNS and the default ServiceAccount
// (e2e-framework's own kind provider waits for kindnet pods, which this node image has none of).
func (k *Kind) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	cs, err := kubernetes.NewForConfig(client.RESTConfig())
	if err != nil {
		return err
	}
	return k.waitUsable(ctx, cs)
}

// KubernetesRestConfig is the cluster's REST config once created.
func (k *Kind) KubernetesRestConfig() *rest.Config { return k.rest }

// withCommandOutput adds the output of the command that failed inside kind (kubeadm's, say) to
// err, as the kind CLI prints it.
func withCommandOutput(err error) error {
	// kind wraps with github.com/pkg/errors (Cause), others with %w.
	rerr := kindexec.RunErrorForError(err)
	if rerr == nil {
		_ = errors.As(err, &rerr)
	}
	if rerr != nil && len(rerr.Output) > 0 {
		return fmt.Errorf("%w\n%s", err, lastLines(string(rerr.Output), 40))
	}
	return err
}

// writeLine writes message as one line (kind's status messages end in their own newline).
func writeLine(w io.Writer, message string) { fmt.Fprintln(w, strings.TrimRight(message, "\n")) }

// kindLogger writes kind's user-facing messages (V(0), warnings, errors) to w.
type kindLogger struct{ w io.Writer }

func (l kindLogger) Warn(message string)               { writeLine(l.w, "WARNING: "+message) }
func (l kindLogger) Warnf(format string, args ...any)  { l.Warn(fmt.Sprintf(format, args...)) }
func (l kindLogger) Error(message string)              { writeLine(l.w, "ERROR: "+message) }
func (l kindLogger) Errorf(format string, args ...any) { l.Error(fmt.Sprintf(format, args...)) }
func (l kindLogger) V(level kindlog.Level) kindlog.InfoLogger {
	return kindInfoLogger{w: l.w, enabled: level <= 0}
}

type kindInfoLogger struct {
	w       io.Writer
	enabled bool
}

func (l kindInfoLogger) Info(message string) {
	if l.enabled {
		writeLine(l.w, message)
	}
}
func (l kindInfoLogger) Infof(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }
func (l kindInfoLogger) Enabled() bool                    { return l.enabled }

// lockKindNetwork takes a lock, machine-wide (one Docker engine), held while a cluster is created
// and while Down removes the kind network: `kind create cluster` makes the network before it
// starts the nodes, and a Down of another cluster in between (make test's lanes run the kind
// suites at the same time) would find it empty and remove it under the new cluster.
func lockKindNetwork() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "platform-operators-kind-network.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// DockerAnswers reports whether a Docker engine answers.
func DockerAnswers(ctx context.Context) bool { return dockerCmd(ctx, "info").Run() == nil }
