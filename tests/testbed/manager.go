package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/platform-operators/platform-operators/controller/tenantconfig"
)

// ManagerSpec is how the chart runs the manager: read back from the installed Deployment.
type ManagerSpec struct {
	Namespace      string
	ServiceAccount string
	Args           []string
	// Env holds KEY=VALUE pairs; downward-API fields are resolved as the kubelet would.
	Env []string
	// MemoryLimit is the container's resources.limits.memory in bytes; 0 when it has none.
	MemoryLimit int64
	// CPURequestMilli is the container's resources.requests.cpu in milliCPU; 0 when it has none.
	CPURequestMilli int64
}

// ReadManagerSpec reads the args, env and ServiceAccount of the named container of a Deployment.
func ReadManagerSpec(ctx context.Context, cs kubernetes.Interface, namespace, deployment, container string) (ManagerSpec, error) {
	d, err := cs.AppsV1().Deployments(namespace).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		return ManagerSpec{}, fmt.Errorf("reading the manager Deployment: %w", err)
	}
	spec := ManagerSpec{Namespace: namespace, ServiceAccount: d.Spec.Template.Spec.ServiceAccountName}
	if spec.ServiceAccount == "" {
		spec.ServiceAccount = "default"
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != container {
			continue
		}
		spec.Args = append(append(spec.Args, c.Command[min(1, len(c.Command)):]...), c.Args...)
		if l, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			spec.MemoryLimit = l.Value()
		}
		if r, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			spec.CPURequestMilli = r.MilliValue()
		}
		for _, e := range c.Env {
			v, err := envValue(e, namespace)
			if err != nil {
				return ManagerSpec{}, err
			}
			spec.Env = append(spec.Env, e.Name+"="+v)
		}
		return spec, nil
	}
	return ManagerSpec{}, fmt.Errorf("deployment %s/%s has no container %q", namespace, deployment, container)
}

func envValue(e corev1.EnvVar, namespace string) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	if f := e.ValueFrom.FieldRef; f != nil {
		switch f.FieldPath {
		case "metadata.namespace":
			return namespace, nil
		case "metadata.name", "spec.nodeName":
			host, _ := os.Hostname()
			return host, nil
		}
	}
	return "", fmt.Errorf("env %s: only values and metadata field refs can be reproduced outside the cluster", e.Name)
}

// ServiceAccountKubeconfig asks the API for a token of the ServiceAccount (TokenRequest) and
// returns a kubeconfig whose only credential is that token: a kubeconfig that also carried the
// admin client certificate would authenticate as admin. It is built from the pieces the
// manager's `kubeconfig` subcommand uses (controller/tenantconfig), so tests and users share them.
func ServiceAccountKubeconfig(ctx context.Context, cs kubernetes.Interface, admin *rest.Config, namespace, sa string, ttl time.Duration) ([]byte, error) {
	cluster, err := tenantconfig.ClusterFromREST(admin)
	if err != nil {
		return nil, err
	}
	token, err := tenantconfig.RequestToken(ctx, cs, namespace, sa, ttl)
	if err != nil {
		return nil, err
	}
	return tenantconfig.Build(cluster, tenantconfig.Identity{Namespace: namespace, ServiceAccount: sa, Token: token}, "")
}

// Manager is the manager running as a local process.
type Manager struct {
	Cmd *exec.Cmd
	// MetricsAddr and ProbeAddr are the loopback addresses it serves on.
	MetricsAddr, ProbeAddr string
	// PprofAddr is the loopback address of its /debug/pprof endpoints (StartOptions.Pprof); empty
	// when StartManager did not set one.
	PprofAddr string
	LogPath   string
	// Cgroup is the memory cgroup it runs in (StartOptions.MemoryCgroup), nil for none; Stop
	// removes it.
	Cgroup *MemoryCgroup
	// CPU is the CPU cgroup it runs in (StartOptions.CPUCgroup), nil for none; Stop removes it.
	CPU *CPUCgroup
}

// StartOptions are how StartManager runs the process beyond what the chart's spec says; the zero
// value runs a plain host process, as the e2e suites do.
type StartOptions struct {
	// Detach gives the process its own session, so it outlives the caller (make up).
	Detach bool
	// MemoryCgroup runs the process in a memory cgroup of its own limited to the spec's
	// MemoryLimit, as the kubelet runs a container with resources.limits.memory, so the manager
	// finds that limit in its cgroup and sets GOMEMLIMIT from it (--memory-limit-ratio) as in a
	// pod; a GOMEMLIMIT in the caller's environment is not passed on (a pod would not have it).
	// StartManager fails when it cannot make such a cgroup; it does nothing when the spec has
	// no limit.
	MemoryCgroup bool
	// CPUCgroup runs the process in a CPU cgroup of its own whose weight is the one the kubelet
	// gives a pod with the spec's CPU request (CPUShares, CPUWeight; the minimum when it has
	// none), so on a busy machine it gets the share a pod would. StartManager fails when it
	// cannot make such a cgroup.
	CPUCgroup bool
	// CPUParent, when set, is the cgroup the CPU cgroup is made in (a node's pods cgroup, with
	// the control plane's pods beside it); else the caller's own CPU cgroup.
	CPUParent *CPUCgroup
	// Pprof serves Go's /debug/pprof endpoints on a free loopback port (--pprof-bind-address,
	// Manager.PprofAddr), replacing any address the chart's args give.
	Pprof bool
}

// StartManager runs binary with the spec's args and env against kubeconfig, logging to logPath.
// Two deliberate changes: the bind addresses are moved to free loopback ports so several runs can
// share a machine and nothing listens beyond loopback, and metrics are served as plain HTTP
// (--metrics-secure=false) so the suites and benchmarks read them with a plain GET on loopback.
// The HTTPS endpoint and who it answers are tested against a real API server by the manager's
// envtest (controller/cmd/manager/metrics_test.go) and in the cluster by the kind e2e. o says
// what else to change (StartOptions).
func StartManager(binary string, spec ManagerSpec, kubeconfig, logPath string, o StartOptions) (*Manager, error) {
	metrics, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	probe, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	args := rewriteFlag(spec.Args, "--metrics-bind-address", metrics)
	args = rewriteFlag(args, "--health-probe-bind-address", probe)
	args = rewriteFlag(args, "--metrics-secure", "false")
	m := &Manager{MetricsAddr: metrics, ProbeAddr: probe, LogPath: logPath}
	if o.Pprof {
		if m.PprofAddr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		args = rewriteFlag(args, "--pprof-bind-address", m.PprofAddr)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	env := os.Environ()
	m.Cmd = exec.Command(binary, args...)
	var dirs []string
	if o.MemoryCgroup && spec.MemoryLimit > 0 {
		if m.Cgroup, err = NewMemoryCgroup("po-manager", spec.MemoryLimit); err != nil {
			return nil, err
		}
		dirs = append(dirs, m.Cgroup.Dir)
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOMEMLIMIT=") })
	}
	if o.CPUCgroup {
		if m.Cgroup != nil && m.Cgroup.Version == 2 {
			// One process is in one v2 cgroup: a memory and a CPU cgroup of its own cannot both hold it.
			_ = m.Cgroup.Remove(0)
			return nil, errors.New("cgroup v2: running the manager in a memory and a CPU cgroup of its own at once is not implemented (a v2 process is in one cgroup); turn one of them off")
		}
		if o.CPUParent != nil {
			m.CPU, err = o.CPUParent.NewChild("po-manager", spec.CPURequestMilli)
		} else {
			m.CPU, err = NewCPUCgroup("po-manager", spec.CPURequestMilli)
		}
		if err != nil {
			if m.Cgroup != nil {
				_ = m.Cgroup.Remove(0)
			}
			return nil, err
		}
		dirs = append(dirs, m.CPU.Dir)
		// A pod's GOMAXPROCS is the runtime's own choice from its cgroup (Go 1.25+), never
		// the caller's environment.
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
	}
	if len(dirs) > 0 {
		m.Cmd = JoinCommand(dirs, binary, args...)
	}
	m.Cmd.Env = append(append(env, spec.Env...), "KUBECONFIG="+kubeconfig)
	m.Cmd.Stdout, m.Cmd.Stderr = logf, logf
	if o.Detach {
		detach(m.Cmd)
	}
	if err := m.Cmd.Start(); err != nil {
		if m.Cgroup != nil {
			_ = m.Cgroup.Remove(0)
		}
		if m.CPU != nil {
			_ = m.CPU.Remove(0)
		}
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	return m, nil
}

// rewriteFlag sets --name=value, replacing the flag if present (in = or space form).
func rewriteFlag(args []string, name, value string) []string {
	out := make([]string, 0, len(args)+1)
	found := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, name+"="):
			out = append(out, name+"="+value)
			found = true
		case a == name && i+1 < len(args):
			out = append(out, name+"="+value)
			i++
			found = true
		default:
			out = append(out, a)
		}
	}
	if !found {
		out = append(out, name+"="+value)
	}
	return out
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// WaitReady polls /readyz until it answers 200, the process exits, or ctx ends.
func (m *Manager) WaitReady(ctx context.Context) error {
	exited := make(chan struct{})
	go func() {
		// Process.Wait belongs to the caller, so an exited child may linger as a zombie: read
		// its state from /proc rather than probing with signal 0, which a zombie still accepts.
		for {
			if !alive(m.Cmd.Process.Pid) {
				close(exited)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := HTTPGet(ctx, "http://"+m.ProbeAddr+"/readyz"); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("manager exited before it became ready; see %s:\n%s", m.LogPath, tailFile(m.LogPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("manager not ready: %w; see %s", ctx.Err(), m.LogPath)
		case <-t.C:
		}
	}
}

// Stop sends SIGTERM and waits up to grace for a clean exit, then kills; then it removes the
// process's memory cgroup, if it has one, once the process is gone (its parent must reap it:
// call Cmd.Wait, as the callers do).
func (m *Manager) Stop(grace time.Duration) error {
	err := StopPID(m.Cmd.Process.Pid, grace)
	if m.Cgroup != nil {
		if rerr := m.Cgroup.Remove(30 * time.Second); err == nil {
			err = rerr
		}
	}
	if m.CPU != nil {
		if rerr := m.CPU.Remove(30 * time.Second); err == nil {
			err = rerr
		}
	}
	return err
}

// StopPID stops a process by pid: SIGTERM, then SIGKILL after grace. A pid that is gone is fine.
func StopPID(pid int, grace time.Duration) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		if errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	if wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, grace, true, func(context.Context) (bool, error) {
		return !alive(pid), nil
	}) == nil {
		return nil
	}
	return p.Kill()
}

// alive is true while pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return lastLines(string(b), n)
}

// BuildManager builds the manager binary from the repository at root into out.
func BuildManager(ctx context.Context, root, out string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "./controller/cmd/manager")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	return nil
}

// RunAsChart starts binary the way the installed chart runs the manager: the args and env of the
// Deployment named release in namespace, and a kubeconfig (written to dir/manager.kubeconfig)
// holding only a token of the chart's ServiceAccount, valid for ttl. The log goes to
// dir/manager.log. It returns once the process started; use WaitReady to wait for /readyz. o says
// how to run it beyond the chart's spec (StartOptions{} for a plain host process).
func RunAsChart(ctx context.Context, cs kubernetes.Interface, admin *rest.Config, binary, release, namespace, dir string, ttl time.Duration, o StartOptions) (*Manager, error) {
	spec, err := ReadManagerSpec(ctx, cs, namespace, release, "manager")
	if err != nil {
		return nil, err
	}
	kc, err := ServiceAccountKubeconfig(ctx, cs, admin, namespace, spec.ServiceAccount, ttl)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "manager.kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	return StartManager(binary, spec, kubeconfig, filepath.Join(dir, "manager.log"), o)
}

// HTTPGet fetches url (the manager's /metrics or /readyz on loopback) and returns the body; a
// status other than 200 is an error that still carries the body.
func HTTPGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}
