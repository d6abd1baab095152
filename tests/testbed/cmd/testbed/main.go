// Command testbed brings the local test bed up and down (`make up`, `make down`) and runs
// chart-testing on real nodes (`make test-ct`).
//
//	testbed up --provider kind [--values FILE]...  kind cluster (real nodes) + registry with credentials +
//	                                               the project's images pushed there + chart; the manager
//	                                               runs in the cluster, pulled through the registry
//	testbed up --provider kwok [--values FILE]...  kwok cluster + chart + manager as a local process
//	                                               with the chart's ServiceAccount (where no container runs)
//	testbed down                                   delete the cluster, stop the registry or manager, remove .cluster/
//	testbed ct --upgrade-from REF                  `ct install` and an upgrade from the release at REF (its chart and image), on kind
//	testbed registry-proxy --dir DIR               the access proxy in front of `up`'s registry (up starts it detached)
//
// Everything `up` makes lives under .cluster/ in the repository: kubeconfig (admin), and for kind
// registry/ (config, htpasswd, storage, log, pid, password); for kwok manager.kubeconfig (the
// ServiceAccount token, nothing else), manager.log, manager.pid, kwok/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type config struct {
	root, bin, dir     string
	cluster, release   string
	namespace, manager string
	valueFiles         stringList
	nodes              int
	tokenTTL           time.Duration
	provider           string
	workers            int
	upgradeFrom        string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testbed up|down|ct [flags]")
		os.Exit(2)
	}
	if os.Args[1] == "registry-proxy" {
		pfs := flag.NewFlagSet("registry-proxy", flag.ExitOnError)
		dir := pfs.String("dir", "", "The registry's directory, holding access.json.")
		_ = pfs.Parse(os.Args[2:])
		fail(testbed.ServeRegistryProxy(*dir))
	}
	var c config
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	// "..": `go -C tests run ./testbed/cmd/testbed` (tests/ is its own Go module) runs it in tests/.
	fs.StringVar(&c.root, "root", "..", "Repository root.")
	fs.StringVar(&c.cluster, "cluster", "platform-operators", "kwok cluster name.")
	fs.StringVar(&c.release, "release", "platform-operators", "Helm release name (also the Deployment's name).")
	fs.StringVar(&c.namespace, "namespace", "platform-operators-system", "Release namespace.")
	fs.StringVar(&c.manager, "manager", "bin/manager", "Manager binary, relative to the root.")
	fs.Var(&c.valueFiles, "values", "Helm values file (repeatable), as helm -f.")
	fs.IntVar(&c.nodes, "nodes", 2, "Fake nodes to create.")
	fs.DurationVar(&c.tokenTTL, "token-ttl", 24*time.Hour, "Lifetime of the manager's ServiceAccount token; `make up` again renews it.")
	fs.StringVar(&c.provider, "provider", "kind", "Cluster for `up`: kind (real nodes, the manager in-cluster) or kwok (fake nodes, the manager as a local process).")
	fs.IntVar(&c.workers, "workers", 0, "kind worker nodes besides the control plane (0: one node runs everything).")
	fs.StringVar(&c.upgradeFrom, "upgrade-from", "", "ct: git revision whose chart and manager image are installed and then upgraded to the working tree's.")
	_ = fs.Parse(os.Args[2:])
	root, err := filepath.Abs(c.root)
	if err != nil {
		fail(err)
	}
	c.root, c.bin, c.dir = root, testbed.Bin(root), filepath.Join(root, ".cluster")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch os.Args[1] {
	case "up":
		switch c.provider {
		case "kind":
			err = upKind(ctx, c)
		case "kwok":
			err = up(ctx, c)
		default:
			err = fmt.Errorf("--provider must be kind or kwok, not %q", c.provider)
		}
	case "ct":
		err = chartTesting(ctx, c)
	case "down":
		err = down(ctx, c)
	default:
		err = fmt.Errorf("unknown command %q: want up, down or ct", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testbed:", err)
	os.Exit(1)
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func (c config) kwok() testbed.Kwok {
	// The e2e suite's stages: kwok's defaults plus failing and long-running Job pods on request.
	stages := filepath.Join(c.root, "tests", "testbed", "kwok-stages.yaml")
	return testbed.Kwok{Name: c.cluster, Bin: c.bin, Workdir: filepath.Join(c.dir, "kwok"), Out: os.Stderr, Configs: []string{stages}}
}

func up(ctx context.Context, c config) error {
	start := time.Now()
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	step("kwok cluster %q (binary runtime, work dir %s)", c.cluster, filepath.Join(c.dir, "kwok"))
	k := c.kwok()
	kubeconfig := filepath.Join(c.dir, "kubeconfig")
	kc, err := k.UpWithKubeconfig(ctx, c.nodes, kubeconfig)
	if err != nil {
		return err
	}

	step("helm upgrade -i %s charts/platform-operators -n %s %s", c.release, c.namespace, valuesArgs(c.valueFiles))
	vals, err := (&values.Options{ValueFiles: c.valueFiles}).MergeValues(getter.All(cli.New()))
	if err != nil {
		return fmt.Errorf("reading values: %w", err)
	}
	if _, err := testbed.UpgradeInstall(testbed.Release{
		Name: c.release, Namespace: c.namespace, ChartDir: filepath.Join(c.root, "charts", "platform-operators"),
		Kubeconfig: kubeconfig, Values: vals,
	}, nil); err != nil {
		return err
	}

	pidFile := filepath.Join(c.dir, "manager.pid")
	if pid, err := readPID(pidFile); err == nil {
		step("stopping the previous manager (pid %d)", pid)
		if err := testbed.StopPID(pid, 15*time.Second); err != nil {
			return err
		}
	}
	restCfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	step("starting %s as the chart's ServiceAccount, with the Deployment's args", c.manager)
	m, err := testbed.RunAsChart(ctx, cs, restCfg, filepath.Join(c.root, c.manager), c.release, c.namespace, c.dir, c.tokenTTL, testbed.StartOptions{Detach: true})
	if err != nil {
		return err
	}
	logPath := m.LogPath
	step("manager args: %s", strings.Join(m.Cmd.Args[1:], " "))
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(m.Cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	readyCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := m.WaitReady(readyCtx); err != nil {
		return err
	}
	pid := m.Cmd.Process.Pid
	// The process is detached and must outlive us: let go of it without waiting.
	_ = m.Cmd.Process.Release()

	fmt.Printf(`
Test bed is up in %s.
  admin kubeconfig:   %s
  manager:            pid %d, log %s
  manager metrics:    http://%s/metrics   probes: http://%s/readyz

Try:
  export KUBECONFIG=%s
  kubectl get nodes
  kubectl -n %s get deploy,sa,lease
  kubectl run demo --image=busybox --restart=Never && kubectl delete pod demo
  kubectl -n secretsync create secret generic shared --type=platform-operators.io/secretsync --from-literal=token=s3cr3t
  kubectl get secrets -A --field-selector metadata.name=shared; kubectl get secretsyncs
  tail -f %s
Stop it all with: make down
`, time.Since(start).Round(time.Second), kubeconfig, pid, logPath, m.MetricsAddr, m.ProbeAddr,
		kubeconfig, c.namespace, logPath)
	return nil
}

func valuesArgs(files []string) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString("-f " + f + " ")
	}
	return strings.TrimSpace(b.String())
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func down(ctx context.Context, c config) error {
	if err := downKind(ctx, c); err != nil {
		return err
	}
	pidFile := filepath.Join(c.dir, "manager.pid")
	if pid, err := readPID(pidFile); err == nil {
		step("stopping the manager (pid %d)", pid)
		if err := testbed.StopPID(pid, 15*time.Second); err != nil {
			return err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.bin, "kwokctl")); err == nil {
		step("deleting kwok cluster %q", c.cluster)
		if err := c.kwok().Down(ctx); err != nil {
			return err
		}
	}
	step("removing %s", c.dir)
	return os.RemoveAll(c.dir)
}
