package testbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Kind is a kind cluster on the node image the project builds here (scripts/kind-node.sh): real
// nodes (containers running systemd, containerd and the kubelet) that run real pods.
type Kind struct {
	// Name is the cluster's name.
	Name string
	// Root is the repository root: scripts/ and bin/ (kind, the node image's binaries) live there.
	Root string
	// Workers is the number of worker nodes besides the control plane: 0 (one node that runs
	// everything) or more (the control plane is then tainted as usual).
	Workers int
	// Kubeconfig is where the admin kubeconfig is written. kind is always given it, so it never
	// touches ~/.kube/config.
	Kubeconfig string
	// Registry is host:port of a plain-HTTP registry the nodes' containerd may pull from (Harbor's
	// role in the test bed); empty for none.
	Registry string
	// Out receives the progress of kind and the node image build; nil discards it.
	Out io.Writer
	// Image is a node image to use instead of building ours (e.g. upstream's kindest/node on a
	// machine that can pull it; KIND_NODE_IMAGE in the e2e suite).
	Image string
	// Early makes Up return as soon as the API server answers and every node has its pod routes,
	// without waiting for kube-proxy and CoreDNS: what a user who installs right after
	// `kind create cluster` meets (the e2e suite installs so, and asserts no manager restart).
	Early bool
}

func (k Kind) out() io.Writer {
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

// kindPath is PATH for kind, which runs `docker` by name: the engine's own client comes first.
func (k Kind) kindPath() string {
	if _, err := os.Stat(engineClient); err != nil {
		return os.Getenv("PATH")
	}
	shim := filepath.Join(Bin(k.Root), "docker-client")
	if err := os.MkdirAll(shim, 0o755); err == nil {
		// A new link renamed over the old one: suites run at the same time (make test's lanes)
		// never see the shim without its docker.
		tmp := filepath.Join(shim, fmt.Sprintf(".docker.%d", os.Getpid()))
		_ = os.Remove(tmp)
		if os.Symlink(engineClient, tmp) == nil {
			_ = os.Rename(tmp, filepath.Join(shim, "docker"))
		}
	}
	return shim + string(os.PathListSeparator) + os.Getenv("PATH")
}

func (k Kind) kind(ctx context.Context, args ...string) ([]byte, error) {
	c := exec.CommandContext(ctx, filepath.Join(Bin(k.Root), "kind"), args...)
	c.Env = append(os.Environ(), "PATH="+k.kindPath())
	var stderr bytes.Buffer
	c.Stderr = io.MultiWriter(&stderr, k.out())
	out, err := c.Output()
	if err != nil {
		return out, fmt.Errorf("kind %s: %w: %s", strings.Join(args, " "), err, lastLines(stderr.String(), 20))
	}
	return out, nil
}

// NodeImage builds the node image, or finds it already built, and returns its tag.
func (k Kind) NodeImage(ctx context.Context) (string, error) {
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
func (k Kind) Exists(ctx context.Context) (bool, error) {
	out, err := k.kind(ctx, "get", "clusters")
	if err != nil {
		return false, err
	}
	for _, n := range strings.Fields(string(out)) {
		if n == k.Name {
			return true, nil
		}
	}
	return false, nil
}

// Config is the kind cluster configuration.
func (k Kind) Config() string {
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
// kube-proxy and CoreDNS ready, and the default ServiceAccount there. kind's own --wait covers
// only the nodes; a pod started before kube-proxy programmed the Service VIP cannot reach the API.
func (k Kind) Up(ctx context.Context) (*kubernetes.Clientset, error) {
	exists, err := k.Exists(ctx)
	if err != nil {
		return nil, err
	}
	if exists {
		if _, err := k.kind(ctx, "export", "kubeconfig", "--name", k.Name, "--kubeconfig", k.Kubeconfig); err != nil {
			return nil, err
		}
	} else {
		image := k.Image
		if image == "" {
			if image, err = k.NodeImage(ctx); err != nil {
				return nil, err
			}
		}
		cfgFile := k.Kubeconfig + ".kind.yaml"
		if err := os.WriteFile(cfgFile, []byte(k.Config()), 0o644); err != nil {
			return nil, err
		}
		unlock, err := lockKindNetwork()
		if err != nil {
			return nil, err
		}
		_, err = k.kind(ctx, "create", "cluster", "--name", k.Name, "--image", image, "--config", cfgFile,
			"--kubeconfig", k.Kubeconfig, "--wait", "3m")
		unlock()
		if err != nil {
			return nil, err
		}
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	if err := k.routePodCIDRs(ctx, cs); err != nil {
		return nil, err
	}
	if k.Early {
		return cs, nil
	}
	return cs, WaitClusterReady(ctx, cs, 3*time.Minute)
}

// routePodCIDRs adds, on every node, a route to every other node's podCIDR through that node (what
// kindnetd would do). It runs outside the nodes: a node may read only its own Node object.
func (k Kind) routePodCIDRs(ctx context.Context, cs kubernetes.Interface) error {
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

// LoadImageArchive loads a `docker save` tarball into every node (kind load image-archive).
func (k Kind) LoadImageArchive(ctx context.Context, tar string) error {
	_, err := k.kind(ctx, "load", "image-archive", tar, "--name", k.Name)
	return err
}

// ExportLogs writes the nodes' logs (kubelet, containerd, pods) into dir.
func (k Kind) ExportLogs(ctx context.Context, dir string) error {
	_, err := k.kind(ctx, "export", "logs", dir, "--name", k.Name)
	return err
}

// Down deletes the cluster; one that does not exist is not an error. The kind Docker network is
// removed too once no container uses it.
func (k Kind) Down(ctx context.Context) error {
	exists, err := k.Exists(ctx)
	if err != nil {
		return err
	}
	if exists {
		if _, err := k.kind(ctx, "delete", "cluster", "--name", k.Name, "--kubeconfig", k.Kubeconfig); err != nil {
			return err
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
