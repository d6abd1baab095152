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
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// admin client certificate would authenticate as admin. It is the manager's `kubeconfig`
// subcommand's code (controller/tenantconfig), so tests and users share one implementation.
func ServiceAccountKubeconfig(ctx context.Context, cs kubernetes.Interface, admin *rest.Config, namespace, sa string, ttl time.Duration) ([]byte, error) {
	return tenantconfig.ForServiceAccount(ctx, cs, admin, namespace, sa, ttl)
}

// Manager is the manager running as a local process.
type Manager struct {
	Cmd *exec.Cmd
	// MetricsAddr and ProbeAddr are the loopback addresses it serves on.
	MetricsAddr, ProbeAddr string
	LogPath                string
}

// StartManager runs binary with the spec's args and env against kubeconfig, logging to logPath.
// Two deliberate changes: the bind addresses are moved to free loopback ports so several runs can
// share a machine and nothing listens beyond loopback, and metrics are served as plain HTTP
// (--metrics-secure=false) so the suites and benchmarks read them with a plain GET on loopback.
// The HTTPS endpoint and who it answers are tested against a real API server by the manager's
// envtest (controller/cmd/manager/metrics_test.go) and in the cluster by the kind e2e. With detach
// the process gets its own session and outlives the caller (make up).
func StartManager(binary string, spec ManagerSpec, kubeconfig, logPath string, detach bool) (*Manager, error) {
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
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), spec.Env...), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logf, logf
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	return &Manager{Cmd: cmd, MetricsAddr: metrics, ProbeAddr: probe, LogPath: logPath}, nil
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

// Stop sends SIGTERM and waits up to grace for a clean exit, then kills.
func (m *Manager) Stop(grace time.Duration) error {
	return StopPID(m.Cmd.Process.Pid, grace)
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
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
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
// dir/manager.log. It returns once the process started; use WaitReady to wait for /readyz.
func RunAsChart(ctx context.Context, cs kubernetes.Interface, admin *rest.Config, binary, release, namespace, dir string, ttl time.Duration, detach bool) (*Manager, error) {
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
	return StartManager(binary, spec, kubeconfig, filepath.Join(dir, "manager.log"), detach)
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
