package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // the image has no /usr/share/zoneinfo: ScheduledJob's spec.timeZone needs the IANA data embedded

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/at"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/leaderfence"
	"github.com/platform-operators/platform-operators/controller/logging"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/objectmetrics"
	"github.com/platform-operators/platform-operators/controller/podwatcher"
	"github.com/platform-operators/platform-operators/controller/propagation"
	"github.com/platform-operators/platform-operators/controller/scheduledjob"
	"github.com/platform-operators/platform-operators/controller/secretsync"
	"github.com/platform-operators/platform-operators/controller/startup"
	"github.com/platform-operators/platform-operators/controller/version"
	"github.com/platform-operators/platform-operators/controller/writegate"
)

// The manager's own RBAC needs (controllers add theirs next to their code). The controllers record
// Events with mgr.GetEventRecorder, a k8s.io/client-go/tools/events recorder whose sink is the
// events.k8s.io/v1 client (controller-runtime v0.24 pkg/cluster/cluster.go; the broadcaster creates
// and patches, tools/events/event_broadcaster.go). Core ("") Events are written only by leader
// election, in the release namespace, which the chart's leader-election Role grants.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

type options struct {
	metricsAddr, probeAddr     string
	metricsSecure              bool
	metricsCertDir             string
	metricsEnableHTTP2         bool
	pprofAddr                  string
	leaderElect                bool
	leaderElectionID, leaderNS string
	leaseDuration              time.Duration
	renewDeadline              time.Duration
	retryPeriod                time.Duration
	controllers                string
	logFormat, logLevel        string
	qps                        float64
	burst                      int
	gracefulShutdown           time.Duration
	podWatcherNamespaces       string
	watchNamespaces            string
	secretSyncWorkers          int
	defaultSync                secretsync.Default
	pullSecretSync             secretsync.Default
	pullSecretSAs              string
	jobImage                   string
	scheduledJobWorkers        int
	jobPodsStuckAfter          time.Duration
	perObjectMetricsLimit      int
	apiServerWaitTimeout       time.Duration
	memoryLimitRatio           float64
	showVersion                bool
	kubeconfig, kubeContext    string
	managerNamespace           string
	ownershipKeySecret         string
	withheldSecrets            string
	ownershipPolicy            string
}

// restConfig finds the API server: with neither flag as controller-runtime does (KUBECONFIG,
// in-cluster, ~/.kube/config); with --kubeconfig or --context as kubectl and `manager kubeconfig`
// do: that file (else KUBECONFIG, else ~/.kube/config) and that context of it (else its current
// one). A context exists only in a kubeconfig, so --context never falls back to the pod's
// ServiceAccount.
func restConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	if kubeconfig == "" && kubeContext == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("finding the Kubernetes API (no --kubeconfig, no KUBECONFIG, not in a cluster, no ~/.kube/config): %w", err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		rules.ExplicitPath = kubeconfig
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	// The deferred loader would fall back to the pod's ServiceAccount when no file has a cluster;
	// asked for a context, or a file, it is that or an error.
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if kubeContext != "" && raw.Contexts[kubeContext] == nil {
		return nil, fmt.Errorf("--context %q: no such context in the kubeconfig (%s)", kubeContext, strings.Join(slices.Sorted(maps.Keys(raw.Contexts)), ", "))
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// known lists every controller the manager can run; "*" in --controllers means those on by default.
var known = []enablement.Controller{
	{Name: podwatcher.Name, OnDefault: false},
	{Name: secretsync.Name, OnDefault: true},
	{Name: at.Name, OnDefault: true},
	{Name: scheduledjob.Name, OnDefault: true},
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// usageHeader opens `manager --help` and docs/manager.md.
const usageHeader = `manager runs the platform-operators controllers (SecretSync and its pull mode, CopyRequest;
At; ScheduledJob; the pod watcher) in one controller-runtime manager. In a cluster the chart runs
it; outside one, give it a kubeconfig.

Usage:
  manager [flags]                 run the controllers
  manager kubeconfig [flags]      print a kubeconfig for a tenant's ServiceAccount ('manager kubeconfig --help')
  manager schedule [flags]        print when a schedule runs ('manager schedule --help')
  manager probe URL [flags]       ask URL until it answers 200, for helm test ('manager probe --help')

The Kubernetes API is found as kubectl and controller-runtime find it: --kubeconfig, else the
KUBECONFIG environment variable, else the pod's ServiceAccount (in a cluster), else
~/.kube/config; --context picks a context of that kubeconfig. -h, -help and --help work on every
command (any flag takes one dash or two); a command line that cannot be used exits 2.

Flags:
`

// parseFlags parses and validates the manager's flags: flag.ErrHelp for a help flag (nothing is
// printed), a usageError for a command line it cannot use.
func parseFlags(args []string) (options, error) {
	var o options
	fs := newFlagSet(&o)
	if err := fs.Parse(args); err != nil {
		return o, commandLineError(err, fs, usageHeader, io.Discard) // run prints the usage
	}
	if fs.NArg() > 0 {
		if !strings.HasPrefix(fs.Arg(0), "-") && len(args) > 0 && args[0] == fs.Arg(0) {
			return o, usagef("unknown command %q (commands: %s)", fs.Arg(0), commandNames())
		}
		return o, usagef("unexpected arguments: %q", fs.Args())
	}
	if err := validate(&o); err != nil {
		return o, usageError{err}
	}
	return o, nil
}

// newFlagSet registers every flag of the manager into a new FlagSet writing into o. Parse errors
// are returned, not printed: the caller says them once.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig, for running outside a cluster. Empty: the KUBECONFIG environment variable, else the pod's ServiceAccount, else ~/.kube/config.")
	fs.StringVar(&o.kubeContext, "context", "", "Context of the kubeconfig to use (default: its current context).")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS and answer only requests whose bearer token the API server authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview); false serves plain HTTP to anyone, for development only.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "Directory holding tls.crt and tls.key for the HTTPS metrics endpoint; empty: a self-signed certificate generated in memory at start.")
	fs.BoolVar(&o.metricsEnableHTTP2, "metrics-enable-http2", false, "Offer HTTP/2 on the HTTPS metrics endpoint. Off: it speaks HTTP/1.1 only, which the HTTP/2 Rapid Reset and stream-cancellation attacks (CVE-2023-44487, CVE-2023-39325) cannot use.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "Address Go's /debug/pprof endpoints bind to, for profiling; \"0\" (the default) disables them.")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader through a Lease so only one replica runs the controllers.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "platform-operators", "Name of the leader election Lease.")
	fs.StringVar(&o.leaderNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace; required out of cluster).")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", defaultLeaseDuration, "How long a standby waits after the leader's last renewal before it takes the Lease: the longest failover when the leader dies without releasing it.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", defaultRenewDeadline, "How long the leader keeps retrying to renew the Lease before it gives up leadership (and exits); must be less than the lease duration.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", defaultRetryPeriod, "How often the leader renews and a standby tries to take the Lease.")
	fs.StringVar(&o.controllers, "controllers", "*", "Controllers to run: '*' (all on by default), 'name' to add, '-name' to remove, comma-separated. Known: "+enablement.Names(known)+".")
	fs.StringVar(&o.logFormat, "log-format", "json", "Log format: json or text.")
	fs.StringVar(&o.logLevel, "log-level", "info", "Log level: debug, info, warn (the same as error: the manager logs info and error lines only), error, or a verbosity number.")
	fs.Float64Var(&o.qps, "kube-api-qps", 1000, "Steady queries per second to the Kubernetes API, a client-side limit that bounds a runaway (a bug, or load a tenant drives) whatever the API server's Priority and Fairness lets through; the default leaves the measured fan-outs alone (a 1,000-namespace fan-out fits in the burst; 10,000 copies need at least 8 s, under the 17-24 s the API server took on the benchmark machine: docs/benchmarks.md). -1 sets no limit.")
	fs.IntVar(&o.burst, "kube-api-burst", 2000, "Burst of queries to the Kubernetes API above --kube-api-qps (unused with --kube-api-qps=-1).")
	fs.DurationVar(&o.gracefulShutdown, "graceful-shutdown-timeout", 30*time.Second, "How long to wait for controllers to stop on shutdown.")
	fs.StringVar(&o.watchNamespaces, "watch-namespaces", "", "Namespaces the manager works in, comma-separated (default: all; a value that names none, such as \",\", is refused). For RBAC limited to Roles in those namespaces (chart: rbac.scope=namespaced). SecretSync then copies from and into these only, reads no Namespace (a namespaceSelector may use kubernetes.io/metadata.name only) and reports a SecretSync naming another namespace (NamespaceNotManaged); SecretSyncs themselves are cluster-scoped and still need get, list, watch and status update cluster-wide.")
	fs.StringVar(&o.podWatcherNamespaces, "podwatcher-namespaces", "", "Namespaces the pod watcher watches, comma-separated (default: all; a value that names none is refused).")
	fs.IntVar(&o.secretSyncWorkers, "secretsync-workers", 32, "Concurrent API writes of one SecretSync reconcile; fewer for large copies, so that at most 4 MiB of copy data is in flight (a 1 MiB source: 4).")
	fs.StringVar(&o.defaultSync.Name, "default-secretsync-name", "", "Name of a SecretSync the manager keeps applied (the chart's default); empty: none.")
	fs.StringVar(&o.defaultSync.SourceNamespace, "default-secretsync-source-namespace", "secretsync", "Source namespace of the default SecretSync.")
	fs.StringVar(&o.defaultSync.Type, "default-secretsync-type", "platform-operators.io/secretsync", "Secret type the default SecretSync copies.")
	fs.StringVar(&o.pullSecretSync.Name, "pull-secret-sync-name", "", "Name of a second SecretSync the manager keeps applied that spreads one pull secret to every namespace (the chart's pullSecret.sync); empty: none.")
	fs.StringVar(&o.pullSecretSync.SourceNamespace, "pull-secret-sync-source-namespace", "secretsync", "Namespace of the pull secret that --pull-secret-sync-name spreads.")
	fs.StringVar(&o.pullSecretSync.SourceName, "pull-secret-sync-secret", "", "Name of the pull secret that --pull-secret-sync-name spreads.")
	fs.StringVar(&o.pullSecretSAs, "pull-secret-sync-service-accounts", "default", "ServiceAccounts in each namespace that get the pull secret copy in imagePullSecrets, comma-separated.")
	fs.StringVar(&o.jobImage, "job-image", "docker.io/library/busybox:1.37", "Image in which an At's command runs when the At names none (needs /bin/sh).")
	fs.DurationVar(&o.jobPodsStuckAfter, "job-pods-stuck-after", jobstate.DefaultPodsStuckAfter, "How long a started Job of an At or ScheduledJob may have no pod (every pod create refused: Pod Security admission, a ResourceQuota, a webhook) before its owner reports PodsNotCreated in its status and a Warning Event; 0 turns the report off.")
	fs.IntVar(&o.perObjectMetricsLimit, "per-object-metrics-limit", objectmetrics.DefaultLimit, "Most ScheduledJobs, and most Ats, with per-object series (labels namespace, name: last schedule, last success, next run, active runs; an At's phase); the others are counted in platform_operators_object_metrics_untracked_objects. Bounds what tenants' objects cost the manager and Prometheus; 0 turns the series off.")
	fs.IntVar(&o.scheduledJobWorkers, "scheduledjob-workers", 64, "ScheduledJobs reconciled at once: when many slots fall on the same second, this bounds how many Jobs are created in parallel.")
	fs.DurationVar(&o.apiServerWaitTimeout, "api-server-wait-timeout", 2*time.Minute, "How long to wait at start for the Kubernetes API server to answer (retrying with a backoff from 200ms to 5s) before exiting with an error; 0 exits at the first failure.")
	fs.Float64Var(&o.memoryLimitRatio, "memory-limit-ratio", 0.9, "Share of the container's memory limit (its cgroup's) the Go runtime's soft memory limit (GOMEMLIMIT) is set to, so the garbage collector collects harder before the kubelet would kill the manager; 0 turns it off. A GOMEMLIMIT environment variable wins; without a cgroup limit nothing is set.")
	fs.StringVar(&o.managerNamespace, "manager-namespace", "", "The manager's own namespace: where the ownership key Secret lives and where the Events of cluster-scoped objects (SecretSyncs) are recorded. Empty: the POD_NAMESPACE environment variable, else the pod's namespace (in a cluster), else --leader-election-namespace.")
	fs.StringVar(&o.ownershipKeySecret, "ownership-key-secret", secretsync.DefaultOwnershipKeySecret, "Name of the Secret, in the manager's namespace, holding the key of the ownership proofs on copies; created when absent.")
	fs.StringVar(&o.withheldSecrets, "withheld-secrets", "", "Secrets of the manager's namespace that no SecretSync or CopyRequest ever copies besides the ownership key, comma-separated: the manager's own pull credentials (the chart passes its imagePullSecrets). Helm releases and ServiceAccount tokens are never copied from any namespace.")
	fs.StringVar(&o.ownershipPolicy, "ownership-policy", "", "Name of the chart's ownership-keys ValidatingAdmissionPolicy and of its binding: while both are in force (Deny, failurePolicy Fail, unscoped), a copy carrying our label and a proof annotation is the manager's even when the proof does not verify (a lost or retired key), and is re-signed. Empty: the proof alone decides.")
	fs.BoolVar(&o.showVersion, "version", false, "Print the version and exit.")
	return fs
}

// validate checks what single flags cannot: combinations and ranges.
func validate(o *options) error {
	o.pullSecretSync.ImagePullSecretFor = splitList(o.pullSecretSAs)
	leaderElection := checkLeaderElectionTimings(o.leaseDuration, o.renewDeadline, o.retryPeriod)
	switch {
	case o.pullSecretSync.Name != "" && o.pullSecretSync.SourceName == "":
		return errors.New("--pull-secret-sync-name needs --pull-secret-sync-secret")
	case o.pullSecretSync.Name != "" && o.pullSecretSync.Name == o.defaultSync.Name:
		// Kept applied twice, with two specs, one SecretSync would be rewritten by each in turn.
		return errors.New("--pull-secret-sync-name must differ from --default-secretsync-name")
	case o.scheduledJobWorkers < 1:
		return errors.New("--scheduledjob-workers must be at least 1")
	case o.perObjectMetricsLimit < 0:
		return errors.New("--per-object-metrics-limit must not be negative")
	case o.jobPodsStuckAfter < 0:
		return errors.New("--job-pods-stuck-after must not be negative")
	case o.memoryLimitRatio < 0 || o.memoryLimitRatio > 1:
		return errors.New("--memory-limit-ratio must be between 0 and 1")
	case o.apiServerWaitTimeout < 0:
		return errors.New("--api-server-wait-timeout must not be negative")
	case leaderElection != nil:
		return leaderElection
	case o.qps <= 0 && o.qps != -1:
		return errors.New("--kube-api-qps must be positive, or -1 for no client-side limit")
	case o.burst <= 0:
		// Refused even where -1 leaves it unused: a wrong value is a mistake worth saying.
		return errors.New("--kube-api-burst must be positive")
	}
	return nil
}

// The leader election timings (docs/reliability.md, "Leader election timings"). A leader keeps the
// Lease through a starved minute: client-go gives up leadership (and controller-runtime exits) only
// when no renewal succeeded for defaultRenewDeadline after a round began, a round beginning
// defaultRetryPeriod after the last success, so about 72 s without one successful renewal is
// ridden out. Two leaders never act: a standby takes the Lease only defaultLeaseDuration after it
// last saw it change, and the leaderfence refuses this replica's writes from defaultRenewDeadline
// after its last renewal was sent; the 20 s between the two (cert-manager's margin) absorb a write
// that passed the fence just before it and reached the API server late. The price: a leader that
// dies without releasing the Lease (SIGKILL, node loss) is replaced after about 90 s instead of
// 15 s; a graceful stop releases it, and the standby takes it at its next retry (2-4.4 s).
// controller-runtime's defaults (15 s/10 s/2 s, kube-controller-manager's) give the Lease up after
// 10 s without a renewal, which a busy node's load exceeds (issue 46).
const (
	defaultLeaseDuration = 90 * time.Second
	defaultRenewDeadline = 70 * time.Second
	defaultRetryPeriod   = 2 * time.Second
)

// checkLeaderElectionTimings refuses what client-go's leader elector would refuse at the start of
// the election (leaderelection.NewLeaderElector): better a flag error than a manager that starts,
// syncs its caches and only then exits.
func checkLeaderElectionTimings(lease, renew, retry time.Duration) error {
	switch {
	case lease <= 0 || renew <= 0 || retry <= 0:
		return errors.New("--leader-elect-lease-duration, --leader-elect-renew-deadline and --leader-elect-retry-period must be positive")
	case lease <= renew:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be greater than --leader-elect-renew-deadline (%s)", lease, renew)
	case float64(renew) <= 1.2*float64(retry): // client-go's JitterFactor
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be greater than 1.2 x --leader-elect-retry-period (%s)", renew, retry)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// namespaceList reads a flag's comma-separated namespaces. Empty means all namespaces; a value
// that names none (",") or a name that is not a namespace's is refused, so a typo never widens
// a manager limited to some namespaces to all of them.
func namespaceList(flag, value string) ([]string, error) {
	out := splitList(value)
	if len(out) == 0 && strings.TrimSpace(value) != "" {
		return nil, fmt.Errorf("%s=%q names no namespace: leave it empty for all namespaces, or list them", flag, value)
	}
	for _, ns := range out {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("%s holds %q, which is not a namespace name: %s", flag, ns, strings.Join(errs, "; "))
		}
	}
	return out, nil
}

// defaultSources are the source namespaces of the SecretSyncs the manager keeps applied.
func defaultSources(o options) []string {
	var out []string
	for _, d := range []secretsync.Default{o.defaultSync, o.pullSecretSync} {
		if d.Name != "" {
			out = append(out, d.SourceNamespace)
		}
	}
	return out
}

// run is the manager itself (no subcommand): it runs the controllers until a signal stops it.
func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		writeUsage(stdout, usageHeader, newFlagSet(&options{}))
		return err
	}
	if err != nil {
		return err
	}
	if o.showVersion {
		fmt.Fprintln(stdout, version.String())
		return nil
	}
	log, err := logging.New(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return usageError{err}
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	enabled, err := enablement.Resolve(splitList(o.controllers), known)
	if err != nil {
		return usageError{err}
	}
	watchNamespaces, err := namespaceList("--watch-namespaces", o.watchNamespaces)
	if err != nil {
		return usageError{err}
	}
	podWatcherNamespaces, err := namespaceList("--podwatcher-namespaces", o.podWatcherNamespaces)
	if err != nil {
		return usageError{err}
	}
	if err := checkWatchNamespaces(watchNamespaces, enabled, podWatcherNamespaces, defaultSources(o)); err != nil {
		return usageError{err}
	}
	log.Info("Starting", "version", version.Version, "commit", version.Commit, "controllers", enabled, "watchNamespaces", watchNamespaces)
	if _, err := startup.SetMemoryLimit(o.memoryLimitRatio, log.WithName("memlimit")); err != nil {
		// Not fatal: the manager runs as it would without a limit (the library logged why).
		log.V(1).Info("Go memory limit not set from the cgroup", "reason", err.Error())
	}

	cfg, err := restConfig(o.kubeconfig, o.kubeContext)
	if err != nil {
		return err
	}
	// A negative QPS makes client-go build no rate limiter (rest.Config.QPS).
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	cfg.UserAgent = "platform-operators/" + version.Version

	ctx := ctrl.SetupSignalHandler()
	// ctrl.NewManager asks the API server for its groups at once and fails if it cannot reach
	// it; on a fresh node the Service VIP may not be routed yet, so wait a bounded time first.
	ping, err := startup.ReadyzPing(cfg)
	if err != nil {
		return err
	}
	apiWait := startup.APIServerWait{Ping: ping, Host: cfg.Host, Timeout: o.apiServerWaitTimeout, Log: log}
	if err := apiWait.Run(ctx); err != nil {
		return err
	}
	mgr, err := newManager(ctx, o, enabled, cfg, log, crmetrics.Registry, nil)
	if err != nil {
		return err
	}
	log.Info("Starting manager")
	return mgr.Start(ctx)
}

// newManager builds the manager with the enabled controllers, its health checks and the
// informers they need, ready to start. Metrics register with reg; tweak, when not nil, changes
// the manager's options last (tests run two replicas in one process).
func newManager(ctx context.Context, o options, enabled []string, cfg *rest.Config, log logr.Logger, reg prometheus.Registerer, tweak func(*ctrl.Options)) (ctrl.Manager, error) {
	isOn := func(name string) bool { return slices.Contains(enabled, name) }
	watchNamespaces := splitList(o.watchNamespaces)
	scheme := runtime.NewScheme()
	add := runtime.NewSchemeBuilder(clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	if err := add.AddToScheme(scheme); err != nil {
		return nil, err
	}

	opts := ctrl.Options{
		Scheme: scheme,
		// The manager serves both ports itself (servePorts, package portguard).
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.leaderNS,
		// A graceful stop (SIGTERM) releases the Lease, so a standby takes over at its next retry
		// rather than after the lease duration (docs/reliability.md).
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 new(o.leaseDuration),
		RenewDeadline:                 new(o.renewDeadline),
		RetryPeriod:                   new(o.retryPeriod),
		GracefulShutdownTimeout:       new(o.gracefulShutdown),
	}
	// The manager's cache holds only what cacheInventory declares (cachebounds.ManagerOptions): a
	// kind not declared there is refused by the cache (cachebounds.UndeclaredError), so a
	// controller reading or watching it fails loudly, and is recorded for the enumerating test.
	inv := cacheInventory(isOn, watchNamespaces, splitList(o.podWatcherNamespaces))
	base := cache.Options{DefaultNamespaces: cachebounds.InNamespaces(watchNamespaces)}
	if err := cachebounds.ManagerOptions(inv, base, &opts); err != nil {
		return nil, err
	}
	if tweak != nil {
		tweak(&opts)
	}
	// The manager's config is fenced (fenceWrites wraps its transport); cfg stays plain for what
	// every replica writes before it campaigns (the ownership key below).
	mgrCfg := cfg
	if opts.LeaderElection {
		mgrCfg = rest.CopyConfig(cfg)
		if err := fenceWrites(mgrCfg, &opts); err != nil {
			return nil, err
		}
	}
	mgr, err := ctrl.NewManager(mgrCfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	checks := probeChecks{healthz: map[string]healthz.Checker{"ping": healthz.Ping}, readyz: map[string]healthz.Checker{}}
	// Ready once the informers of the enabled controllers have synced, on the leader and on a
	// standby alike. Requested now, before the start, they are started with the cache, and
	// controller-runtime (v0.24, pkg/manager/internal.go, controllerManager.Start) orders the
	// start as: health probe and metrics servers; caches, waiting until every informer requested
	// so far has synced; runnables that need no leader; only then leader election, and the
	// controllers once elected. So a replica campaigns for the Lease only with these caches warm,
	// and a standby keeps them in step while it waits: whichever replica takes over holds a
	// synced cache and starts reconciling at once, and a replica that just started (cold) cannot
	// take the Lease before its caches have synced. No ordering of our own is needed.
	warm := make([]client.Object, len(inv.Kinds))
	for i, k := range inv.Kinds {
		warm[i] = k.Object
	}
	informers, err := startup.WarmInformers(ctx, mgr.GetCache(), scheme, warm)
	if err != nil {
		return nil, err
	}
	checks.readyz["informers"] = informers.Check
	if checks.readyz["permissions"], err = permissionCheck(ctx, mgr, enabled, watchNamespaces, splitList(o.podWatcherNamespaces), log); err != nil {
		return nil, err
	}
	if err := servePorts(ctx, mgr, o, checks, log); err != nil {
		return nil, err
	}
	// The writes users wait for (Job creates, copies) go before the ones that can wait, across
	// controllers (writegate).
	writes := &writegate.Gate{}
	if isOn(secretsync.Name) {
		m, err := secretsync.NewMetrics(reg)
		if err != nil {
			return nil, err
		}
		ns, err := managerNamespace(o)
		if err != nil {
			return nil, err
		}
		// Every replica reads (or the first creates) the key before it campaigns: a plain client,
		// not the manager's, which refuses writes until this replica leads (fenceWrites).
		direct, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return nil, err
		}
		proofs, err := secretsync.LoadOwnershipKey(ctx, direct, ns, o.ownershipKeySecret)
		if err != nil {
			return nil, err
		}
		// One read of a source per resourceVersion, whichever SecretSyncs and CopyRequests name it.
		reads := secretsync.NewSourceReads(mgr.GetAPIReader(), secretsync.MaxSourceReadBytes)
		r := &secretsync.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Metrics: m, Workers: o.secretSyncWorkers,
			Recorder: secretsync.InNamespace(mgr.GetEventRecorder(secretsync.Name), scheme, ns), Writes: writes,
			Sources: &secretsync.Sources{Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper(), Reads: reads},
			Proofs:  proofs, Protected: propagation.Protected{Namespace: ns, OwnershipKey: o.ownershipKeySecret, Own: splitList(o.withheldSecrets)},
			Namespaces: slices.Sorted(slices.Values(watchNamespaces)),
		}
		if o.ownershipPolicy != "" {
			r.LabelProof = &secretsync.PolicyProof{Reader: mgr.GetAPIReader(), Policy: o.ownershipPolicy}
		}
		if err := r.SetupWithManager(ctx, mgr, 4); err != nil {
			return nil, fmt.Errorf("setting up %s: %w", secretsync.Name, err)
		}
		// Pull mode (CopyRequests) is part of the secretsync controller.
		requests, err := secretsync.SetupRequestController(ctx, mgr, 2, proofs, reads, watchNamespaces)
		if err != nil {
			return nil, err
		}
		requests.Protected = r.Protected
		requests.LabelProof = r.LabelProof
		for _, d := range []secretsync.Default{o.defaultSync, o.pullSecretSync} {
			if d.Name == "" {
				continue
			}
			d.Client = mgr.GetClient()
			if err := d.SetupWithManager(mgr); err != nil {
				return nil, fmt.Errorf("setting up the default SecretSync %s: %w", d.Name, err)
			}
		}
	}
	if err := setupJobControllers(ctx, mgr, reg, o.jobImage, o.jobPodsStuckAfter, isOn(at.Name), isOn(scheduledjob.Name), o.scheduledJobWorkers, o.perObjectMetricsLimit, writes); err != nil {
		return nil, err
	}
	if isOn(podwatcher.Name) {
		m, err := podwatcher.NewMetrics(reg)
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(&podwatcher.Watcher{Informers: mgr.GetCache(), Log: log.WithName(podwatcher.Name), Metrics: m}); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// cacheInventory is every kind the manager's cache holds for the enabled controllers, each with
// its bound (controller/cachebounds). The other caches the manager starts declare theirs where
// they are built: secretsync.SourceCacheKinds (one cache per source namespace) and
// secretsync.NewRequestCaches (the CopyRequest offers and copies). Every kind it declares is one
// an enabled controller watches: the manager warms them all before it campaigns for the lease.
func cacheInventory(isOn func(string) bool, watchNamespaces, podWatcherNamespaces []string) cachebounds.Inventory {
	inv := cachebounds.Inventory{Name: "manager"}
	if isOn(podwatcher.Name) {
		inv.Kinds = append(inv.Kinds, podwatcher.CacheKind(podWatcherNamespaces))
	}
	if isOn(secretsync.Name) {
		inv.Kinds = append(inv.Kinds, secretsync.CacheKinds(len(watchNamespaces) > 0)...)
	}
	if isOn(at.Name) || isOn(scheduledjob.Name) {
		inv.Kinds = append(inv.Kinds, jobs.CacheKind())
	}
	if isOn(at.Name) {
		inv.Kinds = append(inv.Kinds, at.CacheKind())
	}
	if isOn(scheduledjob.Name) {
		inv.Kinds = append(inv.Kinds, scheduledjob.CacheKind())
	}
	return inv
}

// serviceAccountNamespaceFile holds, in a pod, the pod's namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// managerNamespace finds the manager's own namespace: --manager-namespace, else POD_NAMESPACE,
// else the pod's namespace file, else --leader-election-namespace.
func managerNamespace(o options) (string, error) {
	if ns := cmp.Or(o.managerNamespace, os.Getenv("POD_NAMESPACE")); ns != "" {
		return ns, nil
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), nil
	}
	if o.leaderNS != "" {
		return o.leaderNS, nil
	}
	return "", errors.New("unable to find the manager's namespace: set --manager-namespace (or POD_NAMESPACE) when running outside a cluster")
}

// fenceWrites makes the manager refuse to send writes while the Lease has not been renewed
// within the renew deadline (controller/leaderfence): a leader frozen past its Lease (SIGSTOP, a
// stalled node) sends no write when it runs again, in the moment before its elector notices it
// lost the Lease and the process exits. What that does not cover is in docs/reliability.md.
func fenceWrites(cfg *rest.Config, opts *ctrl.Options) error {
	ns := opts.LeaderElectionNamespace
	if ns == "" {
		b, err := os.ReadFile(serviceAccountNamespaceFile)
		if err != nil {
			return fmt.Errorf("unable to find the leader election namespace (--leader-election-namespace): %w", err)
		}
		ns = strings.TrimSpace(string(b))
	}
	fence := leaderfence.New(clock.RealClock{}, *opts.RenewDeadline)
	// As controller-runtime does when its elector gives up: no graceful stop (this replica may no
	// longer write), exit non-zero, and start again as a standby.
	fence.OnLost = func(holder string) {
		ctrl.Log.WithName("leaderelection").Error(leaderfence.ErrLeaseLost, "leader election lost: another replica holds the Lease", "holder", holder)
		os.Exit(1)
	}
	lock, err := fence.NewLeaseLock(cfg, ns, opts.LeaderElectionID, *opts.RenewDeadline)
	if err != nil {
		return err
	}
	opts.LeaderElectionResourceLockInterface = lock
	// The check where each request leaves the process (after client-go's rate limiter), for
	// everything built from cfg from here on: the manager's client and cache, the Event
	// recorder. The Lease lock's client was built above, from a copy, and is not fenced.
	cfg.Wrap(fence.WrapTransport)
	return nil
}
