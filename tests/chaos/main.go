// Command chaos is `make chaos`: a fault harness on the project's real test bed. It brings up (or
// reuses) a kind cluster with the test bed's registry, pushes the manager image there, installs
// the chart with 2 manager replicas and leader election, creates the load once (1000 namespaces
// holding copies of one source Secret, decoy Secrets the add-on does not own, 300 every-minute
// ScheduledJobs), then runs the fault scenarios one after the other on that load. Invariants are
// checked over what client-go watches recorded (tests/chaos/invariants); the summary goes to
// stdout, per-scenario details to bin/chaos/results/, and the table into docs/reliability.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

const (
	clusterName      = "po-chaos"
	registryPort     = 5002 // make up uses 5000, the e2e suite 5001
	robot            = "robot$platform+chaos"
	releaseName      = "platform-operators"
	releaseNamespace = "po-chaos-system"
	managerSelector  = "app.kubernetes.io/name=platform-operators,app.kubernetes.io/component=manager,app.kubernetes.io/instance=" + releaseName
	// Load, as issue 11 asks.
	fanoutNamespaces = 1000
	decoyEvery       = 100 // one namespace in 100 holds a Secret of the copy's name that is not ours
	scheduledJobs    = 300
	startingDeadline = 120
	atsPerScenario   = 5
	sjNamespace      = "chaos-sj"
	atNamespace      = "chaos-at"
	sourceNamespace  = "chaos-source"
	fanoutSecret     = "fanout"
	fanoutLabel      = "chaos.platform-operators.io/fanout"
	imageTag         = "chaos1"
	upgradeTag       = "chaos2"
)

type harness struct {
	root, dir string
	kind      testbed.Kind
	reg       testbed.Registry
	images    testbed.PushedImages
	kubecfg   string
	cs        *kubernetes.Clientset
	cl        client.Client
	rec       *recorder
	vals      map[string]any
	// sjKeys are the ScheduledJobs ("namespace/name"); copyNS the namespaces that must hold a copy.
	sjKeys  []string
	copyNS  []string
	gen     int
	digest  string
	atCount int
}

func main() {
	// "..": `go -C tests run ./chaos` (tests/ is its own Go module) runs it in tests/.
	root := flag.String("root", "..", "repository root (scripts/, bin/, charts/)")
	only := flag.String("scenarios", "", "comma-separated scenarios to run (default: all)")
	list := flag.Bool("list", false, "list the scenarios and exit")
	keep := flag.Bool("keep", false, "keep the kind cluster and registry at the end (a rerun reuses them)")
	docs := flag.String("docs", "docs/reliability.md", "file whose fault-harness section gets the table, relative to -root (empty: none)")
	flag.Parse()
	if *docs != "" && !filepath.IsAbs(*docs) {
		*docs = filepath.Join(*root, *docs)
	}
	if *list {
		for _, s := range scenarios {
			fmt.Printf("%-20s %s\n", s.name, s.faults)
		}
		return
	}
	run, err := selectScenarios(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	os.Exit(func() int {
		defer stop()
		h, err := newHarness(*root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
		return h.main(ctx, run, *keep, *docs)
	}())
}

func newHarness(root string) (*harness, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "bin", "chaos")
	if err := os.MkdirAll(filepath.Join(dir, "results"), 0o755); err != nil {
		return nil, err
	}
	// The watches' reconnect noise during API server restarts goes to a file, not the summary.
	f, err := os.Create(filepath.Join(dir, "client.log"))
	if err != nil {
		return nil, err
	}
	klog.LogToStderr(false)
	klog.SetOutput(f)
	return &harness{root: root, dir: dir, rec: newRecorder()}, nil
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[chaos %s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (h *harness) main(ctx context.Context, run []scenario, keep bool, docs string) int {
	started := time.Now()
	defer func() {
		if keep {
			step("keeping kind cluster %q and the registry (-keep)", clusterName)
			return
		}
		step("deleting kind cluster %q, stopping the registry", clusterName)
		if err := h.kind.Down(context.Background()); err != nil {
			step("deleting the cluster: %v", err)
		}
		if err := h.reg.Stop(); err != nil {
			step("stopping the registry: %v", err)
		}
	}()
	if err := h.setup(ctx); err != nil {
		step("set-up failed: %v", err)
		return 1
	}
	setupTime := time.Since(started)
	step("set-up done in %s", setupTime.Round(time.Second))
	var results []result
	for _, s := range run {
		if ctx.Err() != nil {
			break
		}
		step("scenario %s: %s", s.name, s.faults)
		r := result{Name: s.name, Load: s.load, Faults: s.faults, Checked: s.checked, Start: time.Now(), ConvergeSeconds: -1}
		if err := s.run(ctx, h, &r); err != nil {
			r.Error = err.Error()
		}
		r.End = time.Now()
		results = append(results, r)
		if b, err := json.MarshalIndent(r, "", "  "); err != nil {
			step("scenario %s: result not saved: %v", s.name, err)
		} else {
			_ = os.WriteFile(filepath.Join(h.dir, "results", s.name+".json"), b, 0o644)
		}
		step("scenario %s: %s (%d violation(s)) converge %s", s.name, r.verdict(), len(r.Violations), r.convergeText())
		for _, v := range r.Violations {
			step("  VIOLATION %s", v)
		}
	}
	// The whole run, once more: a slot doubled across scenario boundaries counts too.
	total := time.Since(started)
	table := renderTable(results)
	fmt.Println()
	fmt.Println(table)
	fmt.Printf("set-up %s, whole run %s\n", setupTime.Round(time.Second), total.Round(time.Second))
	if docs != "" && len(run) == len(scenarios) {
		path := docs
		if !filepath.IsAbs(path) {
			path = filepath.Join(h.root, path)
		}
		if err := writeDocs(path, results, setupTime, total, h.commit()); err != nil {
			step("writing %s: %v", path, err)
		} else {
			step("table written into %s", path)
		}
	}
	for _, r := range results {
		if r.verdict() != "pass" {
			return 1
		}
	}
	return 0
}

func selectScenarios(only string) ([]scenario, error) {
	if only == "" {
		return scenarios, nil
	}
	var out []scenario
	for _, name := range strings.Split(only, ",") {
		found := false
		for _, s := range scenarios {
			if s.name == strings.TrimSpace(name) {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (-list lists them)", name)
		}
	}
	return out, nil
}

func (h *harness) restConfigClients() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", h.kubecfg)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	if h.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	h.cl, err = client.New(cfg, client.Options{Scheme: scheme()})
	return err
}
