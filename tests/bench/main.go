// Command bench measures platform-operators on a kwok cluster built from bin/, with the manager
// running exactly as in `make up` (the chart's args, the chart's ServiceAccount), against a floor
// (a bare client doing the same API work on the same cluster in the same run). It writes its
// results into docs/benchmarks.md (between markers, leaving the rest of the file alone) and
// charts into docs/img/. Run it with `make bench`. The handover scenario (leader handover at
// scale, `-scenarios=handover`) is not part of it and writes into docs/reliability.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

const (
	releaseName      = "platform-operators"
	releaseNamespace = "platform-operators-system"
)

// env is a running bench cluster with the manager.
type env struct {
	root, dir string

	admin   *rest.Config
	cs      kubernetes.Interface
	manager *testbed.Manager
	binary  string
	cluster testbed.Kwok
	// memoryLimit is -memory-limit: "chart" runs the manager in a memory cgroup with the chart's
	// limit, as the kubelet runs its container; "off" as a plain host process.
	memoryLimit string
	// cpuShare is -cpu-share: "chart" runs the manager in a CPU cgroup whose weight the kubelet
	// would give the chart's CPU request; "off" as a plain host process.
	cpuShare string
	// node, with -cpu-share=chart, stands for the node's pods cgroup (kubepods): the manager's,
	// the control plane's and the busy scenario's cgroups are made in it; controlPlane are the
	// control plane's.
	node         *testbed.CPUCgroup
	controlPlane []*testbed.CPUCgroup
	// profileDir is -profile-dir: where the scale benchmark writes CPU profiles; empty for none.
	// When set, the manager serves /debug/pprof on loopback.
	profileDir string
}

func main() {
	var o secretSyncOptions
	var so schedulingOptions
	var ho handoverOptions
	var sc scaleOptions
	var lo loadOptions
	var st steadyOptions
	var hs hostileOptions
	var ao amplificationOptions
	var bo busyOptions
	if len(os.Args) > 1 && os.Args[1] == floorWriterCommand {
		// The busy scenario's floor client, run in a cgroup of its own (busy.go).
		if err := floorWriter(os.Args[2:]); err != nil {
			fail(err)
		}
		return
	}
	root := repoRoot()
	out := flag.String("out", filepath.Join(root, "docs", "benchmarks.md"), "Markdown file the results are written into; charts go to img/ beside it.")
	flag.IntVar(&o.namespaces, "namespaces", 1000, "Target namespaces.")
	flag.IntVar(&o.samples, "samples", 50, "Samples for the latency percentiles.")
	flag.IntVar(&o.workers, "floor-workers", 32, "Concurrent writers of the floor client (the manager's --secretsync-workers default is the same).")
	flag.IntVar(&st.namespaces, "steady-namespaces", 1000, "Target namespaces of the steady-state benchmark (the secretsync benchmark's, reused when it ran first).")
	flag.DurationVar(&st.quiet, "steady-quiet", 30*time.Second, "How long the steady-state benchmark counts writes with nothing happening.")
	scenarios := flag.String("scenarios", "secretsync,steady,amplification,scheduling,load,scale,hostile,pullsecrets", "Benchmarks to run, comma-separated: secretsync, steady (writes at steady state with ServiceAccounts and two SecretSyncs sharing a copy name), amplification (the manager's API requests per tenant write, by kind of write), scheduling, load (ScheduledJobs at growing counts beside a Job-create floor, schedules and a fan-out at the same minute, fairness), scale (the fan-out at growing namespace counts), hostile (the manager's memory while a tenant creates large objects carrying our label keys, large ScheduledJobs, Ats and CopyRequests and ServiceAccounts with many imagePullSecrets entries; and a small tenant's copy latency beside it), handover (not in make bench: it takes long to populate), pullsecrets (imagePullSecretFor [\"*\"] over -pull-namespaces × -pull-serviceaccounts in namespaces of its own, pull-0000...; see pullsecrets.go).")
	loadParts := flag.String("load-parts", "schedules,mixed,fair,requests", "Parts of the load benchmark to run, each rewriting only its own section of the report: schedules (the steps beside their floor), mixed (schedules and a fan-out at the same minute), fair (tenants and a huge source), requests (a tenant's CopyRequest beside another tenant's thousands).")
	loadSteps := flag.String("load-schedules", "1000,3000", "Every-minute ScheduledJobs at each step of the load benchmark, ascending.")
	flag.IntVar(&lo.minutes, "load-minutes", 2, "Slots (minutes) measured per step and per part of the load benchmark.")
	flag.IntVar(&lo.mixedSchedules, "load-mixed-schedules", 1000, "ScheduledJobs sharing their minutes with a fan-out in the load benchmark.")
	flag.IntVar(&lo.mixedNamespaces, "load-mixed-namespaces", 1000, "Target namespaces of that fan-out.")
	flag.IntVar(&lo.bigTenant, "load-big-tenant", 2000, "ScheduledJobs of the big tenant in the fairness part of the load benchmark.")
	flag.IntVar(&lo.hugeBytes, "load-huge-bytes", 1<<20-1024, "Size of the huge source in the fairness part (a Secret holds at most 1 MiB).")
	flag.IntVar(&lo.fairNamespaces, "load-fair-namespaces", 300, "Target namespaces of the huge and the small source in the fairness part.")
	flag.IntVar(&hs.configMaps, "hostile-configmaps", 300, "ConfigMaps the hostile tenant creates, each labelled with one of the keys the manager selects on.")
	flag.IntVar(&hs.secrets, "hostile-secrets", 300, "Secrets the hostile tenant creates, each labelled with one of the keys the manager selects on.")
	flag.IntVar(&hs.jobs, "hostile-jobs", 150, "Suspended Jobs the hostile tenant creates with the created-by label.")
	flag.IntVar(&hs.bytes, "hostile-bytes", 800<<10, "Size of each hostile object in bytes.")
	flag.IntVar(&hs.scheduledJobs, "hostile-scheduledjobs", 100, "Suspended ScheduledJobs the hostile tenant creates, each with a jobTemplate of -hostile-jobtemplate-bytes.")
	flag.IntVar(&hs.ats, "hostile-ats", 100, "Ats (scheduled in 2099) the hostile tenant creates, each with a jobTemplate of -hostile-jobtemplate-bytes.")
	flag.IntVar(&hs.jobTemplateBytes, "hostile-jobtemplate-bytes", 850<<10, "Size in bytes of the environment variable in each hostile ScheduledJob's and At's jobTemplate (a schema bound that refuses it is counted as a refusal).")
	flag.IntVar(&hs.copyRequests, "hostile-copyrequests", 100, "CopyRequests the hostile tenant creates, each with an annotation of -hostile-copyrequest-bytes.")
	flag.IntVar(&hs.copyRequestBytes, "hostile-copyrequest-bytes", 240<<10, "Size in bytes of the annotation on each hostile CopyRequest (the API server allows 256 KiB of annotations).")
	flag.IntVar(&hs.serviceAccounts, "hostile-serviceaccounts", 200, "ServiceAccounts the hostile tenant creates, each with -hostile-pullsecret-entries imagePullSecrets entries.")
	flag.IntVar(&hs.pullSecretEntries, "hostile-pullsecret-entries", 6000, "imagePullSecrets entries of each hostile ServiceAccount (names of 63 characters).")
	flag.IntVar(&hs.copySamples, "hostile-copy-samples", 10, "New copies timed into the small tenant's namespace in each phase of the hostile scenario but the flood (during it: one a second for as long as it lasts).")
	flag.IntVar(&hs.few, "hostile-few", 10, "Objects of each kind the hostile tenant creates first, before the flood, with a reading after a restart with them in place: compared to the reading with them all, it says what the count of a tenant's objects costs; 0: none.")
	flag.DurationVar(&hs.late, "hostile-late", 0, "When over 30s: one more reading of the hostile scenario this long after the objects were deleted (each watch of the manager ends within a minute, an informer's first within 5 to 10, freeing the decode buffers it grew); 0: none.")
	busyRequests := flag.String("busy-cpu-requests", "10m,50m,100m,200m", "CPU requests (milliCPU, as in the chart) the busy scenario gives the manager and the floor client in turn, each as the kubelet converts it into a cgroup weight.")
	busyModes := flag.String("busy-modes", "quiet,contended", "Node states of the busy scenario: quiet (nothing added) and contended (-busy-burners CPU burners in a sibling cgroup with the weight of -busy-burner-cpu).")
	flag.StringVar(&bo.burnerCPU, "busy-burner-cpu", "1000m", "CPU request whose weight the busy scenario's burner cgroup gets (a pod requesting one CPU by default).")
	flag.StringVar(&bo.floorCPU, "busy-floor-cpu", "1000m", "CPU request whose weight the busy scenario's floor client gets in every row, or same (the row's request, as the manager's).")
	flag.IntVar(&bo.burners, "busy-burners", runtime.NumCPU(), "Spinning processes in the burner cgroup (one per core by default: every core is wanted).")
	flag.IntVar(&bo.namespaces, "busy-namespaces", 1000, "Target namespaces of the busy scenario's fan-out.")
	flag.IntVar(&bo.schedules, "busy-schedules", 1000, "Every-minute ScheduledJobs of the busy scenario (0: no slots measured).")
	flag.IntVar(&bo.reps, "busy-reps", 3, "Fan-outs (each paired with its floor) per cell of the busy scenario.")
	flag.IntVar(&bo.slots, "busy-slots", 3, "Slots measured per cell of the busy scenario.")
	busySlotRequests := flag.String("busy-slot-cpu-requests", "", "CPU requests of -busy-cpu-requests at which the busy scenario measures slots and their Job floors (empty: every one).")
	flag.IntVar(&bo.jobFloors, "busy-job-floors", 3, "Job floors per identity (admin, then the manager's ServiceAccount) before each cell's slots: a bare client creating the -busy-schedules Jobs at one instant (0: none).")
	flag.IntVar(&bo.fanOuts, "busy-fanouts", 0, "With -busy-together: run this many fan-outs, the first from 3 s before the first measured slot (0: back to back from the ScheduledJobs' creation until the slots are sorted).")
	flag.BoolVar(&bo.together, "busy-together", false, "Run fan-outs back to back while the busy scenario measures a cell's slots, and sort every measured slot's Jobs two minutes after the last slot into on time, late and missing (issue 46: the manager at its request beside the burner, ScheduledJobs and a fan-out at once for minutes). Use -busy-slots for the minutes.")
	flag.IntVar(&bo.jobFloorWorkers, "busy-job-floor-workers", 64, "Concurrent writers of the Job floor (the manager's --scheduledjob-workers default).")
	flag.StringVar(&bo.cpuLimit, "busy-cpu-limit", "", "A CPU limit (e.g. 500m) for the manager's cgroup during the busy scenario, as a CFS quota: the report records the GOMAXPROCS the manager chose. Empty: none, as the chart sets none.")
	flag.IntVar(&lo.bigRequests, "load-big-requests", 3000, "CopyRequests of the big tenant in the requests part of the load benchmark.")
	scalePoints := flag.String("scale-namespaces", "1000,3000,10000", "Target namespaces at each step of the scale benchmark, ascending.")
	flag.IntVar(&sc.samples, "scale-samples", 20, "New-namespace latency samples per step of the scale benchmark.")
	flag.IntVar(&sc.unrelated, "scale-unrelated", 100000, "Unrelated 2 KiB Secrets the scale benchmark's memory phase adds at its last step (0: none).")
	flag.IntVar(&sc.jobs, "scale-jobs", 10000, "Unrelated suspended Jobs the scale benchmark's memory phase adds at its last step (0: none).")
	flag.IntVar(&sc.pods, "scale-pods", 10000, "Unrelated Pods the scale benchmark's memory phase adds at its last step (0: none).")
	flag.IntVar(&so.objects, "scheduled-objects", 1000, "ScheduledJobs, and as many CronJobs, firing every minute.")
	flag.IntVar(&so.minutes, "scheduled-minutes", 5, "Slots (minutes) measured.")
	flag.BoolVar(&so.together, "scheduled-together", false, "Run ScheduledJobs and CronJobs at the same time instead of one after the other.")
	kinds := flag.String("scheduled-kinds", "ScheduledJob,CronJob", "Kinds the scheduling benchmark measures.")
	flag.IntVar(&ao.requests, "amplification-requests", 30, "CopyRequests naming the offered ConfigMap in the amplification benchmark.")
	flag.IntVar(&ao.offerBytes, "amplification-offer-bytes", 200<<10, "Data bytes of that offered ConfigMap.")
	flag.IntVar(&ao.namespaces, "amplification-namespaces", 100, "Target namespaces of the amplification benchmark's SecretSync (at least twice -amplification-writes).")
	flag.IntVar(&ao.writes, "amplification-writes", 10, "Writes of each kind the tenant makes in the amplification benchmark.")
	flag.DurationVar(&ao.interval, "amplification-interval", 2*time.Second, "Time between two writes of a kind in the amplification benchmark.")
	flag.DurationVar(&ao.settle, "amplification-settle", 10*time.Second, "How long the amplification benchmark keeps counting after a kind's last write.")
	flag.StringVar(&ao.jsonOut, "amplification-json", "", "File the amplification benchmark saves its counts to (JSON), for a later run's -amplification-before.")
	flag.StringVar(&ao.before, "amplification-before", "", "Counts an earlier amplification run saved (-amplification-json), shown as \"before\" beside this run's.")
	managerSrc := flag.String("manager-src", root, "Checkout whose manager is built and whose chart (charts/platform-operators, its CRDs included) is installed: another worktree measures older code with this bench.")
	var valueFiles stringList
	flag.Var(&valueFiles, "values", "Extra chart values file (repeatable), as helm -f; the default is the chart's defaults.")
	handoverOut := flag.String("handover-out", filepath.Join(root, "docs", "reliability.md"), "Markdown file the handover results are written into.")
	flag.IntVar(&ho.namespaces, "handover-namespaces", 10000, "Namespaces for the handover benchmark, each targeted by its SecretSync.")
	flag.IntVar(&ho.secrets, "handover-secrets", 100000, "Unrelated 2 KiB Secrets for the handover benchmark, spread over its namespaces.")
	flag.IntVar(&ho.runs, "handover-runs", 3, "Leader stops per handover case.")
	flag.DurationVar(&ho.warm, "handover-warm", 30*time.Second, "How long a standby runs, after it became ready, before the leader is stopped.")
	cases := flag.String("handover-cases", strings.Join(handoverCases, ","), "Handover cases, comma-separated: "+strings.Join(handoverCases, ", ")+".")
	unrelated := flag.String("unrelated", "0,10000,20000", "Unrelated 2 KiB Secrets present at each memory measurement, cumulative.")
	memoryLimit := flag.String("memory-limit", "chart", "Memory limit of the manager: chart (in a memory cgroup of its own with the chart's resources.limits.memory, as the kubelet runs the container, so the manager sets GOMEMLIMIT from it as in a pod; the run fails if no writable memory cgroup is found) or off (a plain host process).")
	binDir := flag.String("bin", filepath.Join(root, "bin"), "Directory holding kwok, kube-apiserver, etcd and the other pinned tools (make tools); another checkout's bin/ serves a worktree that has none.")
	cpuShare := flag.String("cpu-share", "chart", "CPU share of the manager: chart (in a CPU cgroup of its own whose weight is what the kubelet gives the chart's resources.requests.cpu, so on a busy machine it gets a pod's share; the run fails if no writable CPU cgroup is found) or off (a plain host process).")
	profileDir := flag.String("profile-dir", "", "Directory for CPU profiles of kube-apiserver and the manager over each scale step's floor and new-source windows, written as <namespaces>-<floor|ours>-<apiserver|manager>.pprof (a profile lasts as long as the step's floor took, whole seconds, 2 to 50 s; the floor's own as long as expected from the step before), and heap profiles of the manager at each reading of the hostile scenario (hostile-<row>.heap.pprof, after a forced collection); the manager then serves /debug/pprof on loopback. Empty: none.")
	flag.Parse()
	o.unrelated = ints("-unrelated", *unrelated)

	lo.parts = strings.Split(*loadParts, ",")
	lo.schedules = ints("-load-schedules", *loadSteps)
	sc.points = ints("-scale-namespaces", *scalePoints)
	so.kinds = strings.Split(*kinds, ",")
	ho.cases = strings.Split(*cases, ",")
	for _, c := range ho.cases {
		if !slices.Contains(handoverCases, c) {
			fail(fmt.Errorf("-handover-cases: unknown case %q", c))
		}
	}
	if err := checkMemoryLimit(*memoryLimit); err != nil {
		fail(err)
	}
	if err := checkCPUShare(*cpuShare); err != nil {
		fail(err)
	}
	var err error
	if bo.requests, err = milliList("-busy-cpu-requests", *busyRequests); err != nil {
		fail(err)
	}
	if *busySlotRequests != "" {
		if bo.slotRequests, err = milliList("-busy-slot-cpu-requests", *busySlotRequests); err != nil {
			fail(err)
		}
	}
	bo.modes = strings.Split(*busyModes, ",")
	for _, m := range bo.modes {
		if m != "quiet" && m != "contended" {
			fail(fmt.Errorf("-busy-modes: %q is neither quiet nor contended", m))
		}
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			fail(err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ao.src = *managerSrc
	list := strings.Split(*scenarios, ",")
	policy := ""
	if steady, amp := slices.Contains(list, "steady"), slices.Contains(list, "amplification"); steady || amp {
		policy = auditPolicy(steady, amp)
	}
	e, err := setup(ctx, root, *managerSrc, *binDir, valueFiles, *memoryLimit, *cpuShare, *profileDir, policy)
	if err != nil {
		if e != nil {
			e.teardown() // the cluster started before the failure (say, the manager did not build)
		}
		fail(err)
	}
	cmd := "make bench"
	if len(os.Args) > 1 {
		// tests/ is its own Go module: the command as run from the repository root.
		cmd = "go -C tests run ./bench " + strings.Join(os.Args[1:], " ")
	}
	// Charts go beside the markdown file: docs/img for docs/benchmarks.md, a scratch directory for
	// a scratch -out.
	imgDir := filepath.Join(filepath.Dir(*out), "img")
	wrote := false
	err = func() error {
		defer e.teardown()
		for _, scenario := range strings.Split(*scenarios, ",") {
			switch scenario {
			case "secretsync":
				res, err := runSecretSync(ctx, e, o)
				if err != nil {
					return err
				}
				if err := writeSecretSyncReport(*out, imgDir, res, o, cmd); err != nil {
					return err
				}
				wrote = true
			case "steady":
				res, err := runSteadyState(ctx, e, st)
				if err != nil {
					return err
				}
				if err := writeSteadyReport(*out, res, cmd); err != nil {
					return err
				}
				wrote = true
			case "scheduling":
				res, err := runScheduling(ctx, e, so)
				if err != nil {
					return err
				}
				if err := writeSchedulingReport(*out, res, so, cmd); err != nil {
					return err
				}
				wrote = true
			case "scale":
				sc.workers = o.workers
				res, err := runScale(ctx, e, sc)
				if err != nil {
					return err
				}
				if err := writeScaleReport(*out, imgDir, res, cmd); err != nil {
					return err
				}
				wrote = true
			case "load":
				lo.workers = o.workers
				res, err := runLoad(ctx, e, lo)
				if err != nil {
					return err
				}
				if err := writeLoadReport(*out, imgDir, res, lo, cmd); err != nil {
					return err
				}
				wrote = true
			case "amplification":
				res, err := runAmplification(ctx, e, ao)
				if err != nil {
					return err
				}
				if ao.jsonOut != "" {
					if err := saveAmplification(ao.jsonOut, res); err != nil {
						return err
					}
				}
				var before *ampResult
				if ao.before != "" {
					if before, err = loadAmplification(ao.before); err != nil {
						return err
					}
				}
				if err := replaceSection(*out, "amplification", amplificationSection(res, before, ao, cmd)); err != nil {
					return err
				}
				wrote = true
			case "hostile":
				res, err := runHostile(ctx, e, hs)
				if err != nil {
					return err
				}
				if err := writeHostileReport(*out, res, hs, cmd); err != nil {
					return err
				}
				wrote = true
			case "pullsecrets":
				res, err := runPullSecrets(ctx, e, *pullOpts)
				if err != nil {
					return err
				}
				if err := writePullSecretsReport(*out, res, *pullOpts, cmd); err != nil {
					return err
				}
				wrote = true
			case "busy":
				res, err := runBusy(ctx, e, bo)
				if err != nil {
					return err
				}
				if err := writeBusyReport(*out, imgDir, res, bo, cmd); err != nil {
					return err
				}
				wrote = true
			case "handover":
				res, err := runHandover(ctx, e, ho)
				if err != nil {
					return err
				}
				if err := writeHandoverReport(*handoverOut, res, cmd); err != nil {
					return err
				}
				fmt.Printf("handover results written to %s\n", *handoverOut)
			default:
				return fmt.Errorf("unknown scenario %q", scenario)
			}
		}
		return nil
	}()
	if err != nil {
		fail(err)
	}
	if wrote {
		fmt.Printf("results written to %s\n", *out)
	}
}

// ints parses a comma-separated list of integers given to the named flag, or fails.
func ints(name, list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		out = append(out, n)
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Printf("[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// setup starts a kwok cluster, installs the chart of src (root, or -manager-src) with its default
// values and runs the manager built from src as the chart's ServiceAccount, with the CPU share
// cpuShare. auditPolicy, unless empty, is the API server's audit policy (the steady-state
// benchmark names the writers from its log, the amplification benchmark counts the manager's
// requests); empty, the API server pays nothing for auditing.
func setup(ctx context.Context, root, src, bin string, valueFiles []string, memoryLimit, cpuShare, profileDir, auditPolicy string) (*env, error) {
	dir, err := os.MkdirTemp("", "po-bench-")
	if err != nil {
		return nil, err
	}
	e := &env{root: root, dir: dir, binary: filepath.Join(dir, "manager"), memoryLimit: memoryLimit, cpuShare: cpuShare, profileDir: profileDir}
	e.cluster = testbed.Kwok{Name: "po-bench", Bin: bin, Workdir: filepath.Join(dir, "kwok")}
	if auditPolicy != "" {
		e.cluster.AuditPolicy = filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(e.cluster.AuditPolicy, []byte(auditPolicy), 0o600); err != nil {
			return e, err
		}
	}
	logf("starting kwok cluster (work dir %s)", dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc, err := e.cluster.UpWithKubeconfig(ctx, 1, kubeconfig)
	if err != nil {
		return e, err
	}
	if e.admin, err = clientcmd.RESTConfigFromKubeConfig(kc); err != nil {
		return e, err
	}
	if cpuShare == "chart" {
		if err := e.placeControlPlane(); err != nil {
			return e, err
		}
	}
	// The bench's own client is not rate limited: it must never be the bottleneck it measures.
	e.admin.QPS, e.admin.Burst = -1, 0
	// Its typed client speaks protobuf, as the manager (controller-runtime) and the cluster's
	// own controllers do: the floor client is no slower than it can be, and watching Jobs does not
	// make the API server encode every Job in JSON as well.
	typed := rest.CopyConfig(e.admin)
	typed.ContentType = kruntime.ContentTypeProtobuf
	if e.cs, err = kubernetes.NewForConfig(typed); err != nil {
		return e, err
	}
	if err := testbed.BuildManager(ctx, src, e.binary); err != nil {
		return e, err
	}
	vals, err := (&values.Options{ValueFiles: valueFiles}).MergeValues(getter.All(cli.New()))
	if err != nil {
		return e, err
	}
	vals["logging"] = map[string]any{"level": "error"}
	logf("installing the chart of %s (default values, plus %v)", src, valueFiles)
	if _, err := testbed.UpgradeInstall(testbed.Release{
		Name: releaseName, Namespace: releaseNamespace, ChartDir: filepath.Join(src, "charts", "platform-operators"),
		Kubeconfig: kubeconfig, Values: vals,
	}, nil); err != nil {
		return e, err
	}
	return e, e.startManager(ctx)
}

// checkMemoryLimit validates -memory-limit and, for chart, that a memory cgroup can be made here,
// before minutes go into starting the cluster.
func checkMemoryLimit(mode string) error {
	switch mode {
	case "off":
		return nil
	case "chart":
		c, err := testbed.NewMemoryCgroup("po-bench-probe", 1<<30)
		if err != nil {
			return fmt.Errorf("-memory-limit=chart runs the manager in a memory cgroup with the chart's limit, as in a pod, and none can be made here: %w (-memory-limit=off runs it without a limit)", err)
		}
		return c.Remove(5 * time.Second)
	}
	return fmt.Errorf("-memory-limit: %q is neither chart nor off", mode)
}

// checkCPUShare validates -cpu-share and, for chart, that a CPU cgroup can be made here.
func checkCPUShare(mode string) error {
	switch mode {
	case "off":
		return nil
	case "chart":
		c, err := testbed.NewCPUCgroup("po-bench-probe", 10)
		if err != nil {
			return fmt.Errorf("-cpu-share=chart runs the manager in a CPU cgroup with the weight of the chart's request, as in a pod, and none can be made here: %w (-cpu-share=off runs it without one)", err)
		}
		return c.Remove(5 * time.Second)
	}
	return fmt.Errorf("-cpu-share: %q is neither chart nor off", mode)
}

func (e *env) startManager(ctx context.Context) error {
	o := testbed.StartOptions{MemoryCgroup: e.memoryLimit == "chart", CPUCgroup: e.cpuShare == "chart", CPUParent: e.node, Pprof: e.profileDir != ""}
	m, err := testbed.RunAsChart(ctx, e.cs, e.admin, e.binary, releaseName, releaseNamespace, e.dir, 2*time.Hour, o)
	if err != nil {
		return err
	}
	go func() { _ = m.Cmd.Wait() }()
	e.manager = m
	readyCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := m.WaitReady(readyCtx); err != nil {
		return err
	}
	if c := m.Cgroup; c != nil {
		if !c.Holds(m.Cmd.Process.Pid) {
			return fmt.Errorf("the manager (pid %d) is not in its memory cgroup %s", m.Cmd.Process.Pid, c.Dir)
		}
		logf("manager (pid %d) runs in memory cgroup v%d %s, limit %.0f MiB", m.Cmd.Process.Pid, c.Version, c.Dir, float64(c.Limit)/(1<<20))
	}
	if c := m.CPU; c != nil {
		if !c.Holds(m.Cmd.Process.Pid) {
			return fmt.Errorf("the manager (pid %d) is not in its cpu cgroup %s", m.Cmd.Process.Pid, c.Dir)
		}
		w, _ := c.Weight()
		logf("manager (pid %d) runs in cpu cgroup v%d %s, request %dm, weight %d", m.Cmd.Process.Pid, c.Version, c.Dir, c.MilliCPU, w)
	}
	return nil
}

func (e *env) stopManager() {
	if e.manager != nil {
		_ = e.manager.Stop(15 * time.Second)
		e.manager = nil
	}
}

func (e *env) teardown() {
	e.stopManager()
	if err := e.cluster.Down(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench: deleting the cluster:", err)
	}
	for _, c := range append(e.controlPlane, e.node) {
		if c == nil {
			continue
		}
		if err := c.Remove(30 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}
	_ = os.RemoveAll(e.dir)
}

// controlPlaneRequests are the CPU requests of kubeadm's static pods (kind's control plane), in
// milliCPU: on a one-node cluster they are the manager's neighbours in the node's pods cgroup.
var controlPlaneRequests = map[string]int64{"kube-apiserver": 250, "kube-controller-manager": 200, "kube-scheduler": 100, "etcd": 100}

// placeControlPlane makes the node's pods cgroup, with the weight of the machine's CPUs (what the
// kubelet gives kubepods for a node's allocatable CPU), and moves the kwok cluster's control plane
// into it, each process in a cgroup of its own with the weight of its kubeadm static pod's request,
// as on a one-node kind cluster. kwok-controller stands for the kubelet, which runs outside the
// pods cgroup, and stays where it was, as does the bench (the measuring instrument).
func (e *env) placeControlPlane() error {
	var err error
	if e.node, err = testbed.NewCPUCgroup("po-node", int64(runtime.NumCPU())*1000); err != nil {
		return fmt.Errorf("-cpu-share=chart: %w", err)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	placed := map[string]int{}
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(b), "\x00")
		if !strings.HasPrefix(argv0, e.cluster.Workdir+"/") {
			continue
		}
		name := filepath.Base(argv0)
		milli, ok := controlPlaneRequests[name]
		if !ok {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		c, err := e.node.NewChild("po-"+name, milli)
		if err != nil {
			return err
		}
		e.controlPlane = append(e.controlPlane, c)
		if err := c.Add(pid); err != nil {
			return err
		}
		placed[name] = pid
	}
	if len(placed) != len(controlPlaneRequests) {
		return fmt.Errorf("-cpu-share=chart: found %v of the control plane's processes under %s, want all of %v", placed, e.cluster.Workdir, controlPlaneRequests)
	}
	logf("node cgroup %s (weight of %d CPUs): control plane moved in with its kubeadm requests %v (pids %v)", e.node.Dir, runtime.NumCPU(), controlPlaneRequests, placed)
	return nil
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
