package secretsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// The suite shares one envtest API server and one manager, started in TestMain and configured
// as controller/cmd/manager/main.go configures them. Tests run one after another; each one
// works in its own namespaces (named after a prefix of its own) and aims its SecretSyncs at
// them with a namespace label of its own, so no test sees another's copies.
var (
	// ctx lives as long as the manager.
	ctx context.Context
	// k8s talks to the API server directly (no cache): assertions read the truth.
	k8s client.Client
	// apiserver reads the API server's own metrics.
	apiserver rest.Interface
	// mgr is the running manager.
	mgr ctrl.Manager
	// testMetrics are the reconciler's series, on a registry of their own.
	testMetrics *Metrics
	// metricsRegistry holds testMetrics.
	metricsRegistry *prometheus.Registry
	// sources are the SecretSync controller's source caches.
	sources *Sources
	// requests is the CopyRequest controller, set up as main.go sets it up.
	requests *RequestReconciler
	// proofs are the manager's ownership proofs, with the key it keeps in ownershipNS.
	proofs *propagation.Prover
	// apiGets counts the GETs past the caches of both controllers (their APIReader and the
	// source reads they share), by "Kind namespace/name".
	apiGets = &countingReader{}
	// sharedMapper and sharedTransport wrap the manager's REST mapper and HTTP client as the
	// source caches get them (main.go passes the manager's), counting what goes through them.
	sharedMapper    = &countingMapper{}
	sharedTransport = &recordingTransport{}
)

// countingMapper counts the REST mappings asked of a mapper.
type countingMapper struct {
	meta.RESTMapper
	calls atomic.Int64
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.calls.Add(1)
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// recordingTransport records the path of every request it carries.
type recordingTransport struct {
	next  http.RoundTripper
	mu    sync.Mutex
	paths map[string]int
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	if t.paths == nil {
		t.paths = map[string]int{}
	}
	t.paths[req.URL.Path]++
	t.mu.Unlock()
	return t.next.RoundTrip(req)
}

func (t *recordingTransport) requests(path string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paths[path]
}

// countingReader is a client.Reader that counts its GETs by object.
type countingReader struct {
	client.Reader
	mu   sync.Mutex
	gets map[string]int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	if c.gets == nil {
		c.gets = map[string]int{}
	}
	c.gets[fmt.Sprintf("%T %s", obj, key)]++
	c.mu.Unlock()
	return c.Reader.Get(ctx, key, obj, opts...)
}

// count is the number of GETs of obj's kind at key so far.
func (c *countingReader) count(obj client.Object, key client.ObjectKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[fmt.Sprintf("%T %s", obj, key)]
}

// ownershipNS stands for the manager's own namespace: the ownership key and the SecretSyncs'
// Events are there.
const ownershipNS = "platform-operators-system"

// managerPullSecret is, in ownershipNS, a Secret the manager pulls with (--withheld-secrets).
const managerPullSecret = "platform-operators-pull"

// testOwnershipPolicy names the ownership-keys policy and binding the suite's reconciler
// checks (the chart's <fullname>-ownership-keys).
const testOwnershipPolicy = "test-ownership-keys"

// caseLabel marks a test's namespaces; each test's SecretSyncs select its own value.
const caseLabel = "test.platform-operators.io/case"

// timeout bounds every wait for the controller. It is generous for two shared cores.
const timeout = 20 * time.Second

// conflictRecheck is how soon a SecretSync with conflicts looks again in these tests.
const conflictRecheck = 2 * time.Second

// rejectedRecheck is how soon a copy the API server rejected is tried again in these tests:
// longer than the windows in which TestACopyTheAPIServerRejectsIsReportedAndNotRetriedInALoop
// asserts that nothing is resent, shorter than timeout.
const rejectedRecheck = 15 * time.Second

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	// Controller logs are noise unless a failure needs them: SECRETSYNC_TEST_LOG=1 shows them.
	log := logr.Discard()
	if os.Getenv("SECRETSYNC_TEST_LOG") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1})
	}
	ctrl.SetLogger(log)

	// Only the SecretSync and CopyRequest CRDs: this suite needs no other, and so does not
	// depend on theirs.
	cfg, stop, err := testenv.StartSuite("ops.platform-operators.io_secretsyncs.yaml", "ops.platform-operators.io_copyrequests.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = stop() }()

	if err := setUp(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the manager:", err)
		return 1
	}
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	synced := mgr.GetCache().WaitForCacheSync(syncCtx)
	syncCancel()
	if !synced {
		cancel()
		fmt.Fprintln(os.Stderr, "the manager's cache did not sync")
		return 1
	}

	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}

// setUp builds the manager and the reconciler as main.go does: the controller's cache scope,
// Sources, the manager's event recorder, fresh metrics, leader election and metrics server off.
func setUp(cfg *rest.Config) error {
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	var err error
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	apiserver = cs.CoreV1().RESTClient()
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ownershipNS}}); err != nil {
		return err
	}
	if proofs, err = LoadOwnershipKey(context.Background(), k8s, ownershipNS, DefaultOwnershipKeySecret); err != nil {
		return err
	}
	opts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	}
	if err := cachebounds.ManagerOptions(cachebounds.Inventory{Name: "manager", Kinds: CacheKinds(false)}, cache.Options{}, &opts); err != nil {
		return err
	}
	mgr, err = ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	metricsRegistry = prometheus.NewRegistry()
	testMetrics, err = NewMetrics(metricsRegistry)
	if err != nil {
		return err
	}
	// As main.go: one SourceReads for both controllers.
	apiGets.Reader = mgr.GetAPIReader()
	reads := NewSourceReads(apiGets, MaxSourceReadBytes)
	sharedMapper.RESTMapper = mgr.GetRESTMapper()
	shared := *mgr.GetHTTPClient()
	sharedTransport.next = shared.Transport
	shared.Transport = sharedTransport
	sources = &Sources{Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), HTTPClient: &shared, Mapper: sharedMapper, Reads: reads}
	r := &Reconciler{
		Client: withWriteFaults(mgr.GetClient()), APIReader: apiGets, Metrics: testMetrics, Workers: 8,
		Recorder: InNamespace(mgr.GetEventRecorder(Name), scheme, ownershipNS),
		Sources:  sources,
		Proofs:   proofs, Protected: propagation.Protected{Namespace: ownershipNS, OwnershipKey: DefaultOwnershipKeySecret, Own: []string{managerPullSecret}},
		// As main.go with --ownership-policy; the policy exists only while a test creates it.
		LabelProof: &PolicyProof{Reader: mgr.GetAPIReader(), Policy: testOwnershipPolicy, Recheck: 500 * time.Millisecond},
		// The one field main.go leaves at its default (a minute): too long to wait for here.
		ConflictRecheck: conflictRecheck,
		RejectedRecheck: rejectedRecheck,
	}
	if err := r.SetupWithManager(context.Background(), mgr, 4); err != nil {
		return err
	}
	requests, err = SetupRequestController(context.Background(), mgr, 2, proofs, reads, nil)
	requests.APIReader = apiGets
	if err != nil {
		return err
	}
	requests.ConflictRecheck = conflictRecheck
	requests.Protected = r.Protected
	requests.LabelProof = r.LabelProof
	// The CopyRequest controller's writes are counted and faulted as the SecretSync's.
	requests.Client = withWriteFaults(requests.Client)
	return nil
}

// eventually polls check until it returns nil, failing the test with the last error after
// timeout.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var err error
	if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		err = check()
		return err == nil, nil
	}) != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}

// namespace creates a namespace with the given labels; it stays (envtest runs no namespace
// controller, so a deleted namespace would stay Terminating anyway).
func namespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// targetNamespace creates a namespace the case's SecretSyncs select.
func targetNamespace(t *testing.T, name, caseName string) string {
	t.Helper()
	return namespace(t, name, map[string]string{caseLabel: caseName})
}

// setNamespaceLabel sets (value != "") or removes (value == "") a label of a namespace.
func setNamespaceLabel(t *testing.T, name, key, value string) {
	t.Helper()
	var v any = value
	if value == "" {
		v = nil
	}
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}}
	if err := k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, mustJSON(t, patch))); err != nil {
		t.Fatalf("labelling namespace %s: %v", name, err)
	}
}

// secretOption shapes a test Secret.
type secretOption func(*corev1.Secret)

func withType(typ corev1.SecretType) secretOption {
	return func(s *corev1.Secret) { s.Type = typ }
}

func withData(data map[string][]byte) secretOption {
	return func(s *corev1.Secret) { s.Data = data }
}

func withLabels(labels map[string]string) secretOption {
	return func(s *corev1.Secret) { s.Labels = labels }
}

func immutable() secretOption {
	return func(s *corev1.Secret) { yes := true; s.Immutable = &yes }
}

// makeSecret is an Opaque Secret with one key unless options say otherwise.
func makeSecret(ns, name string, opts ...secretOption) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"token": []byte("s3cr3t")},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func createSecret(t *testing.T, s *corev1.Secret) *corev1.Secret {
	t.Helper()
	if err := k8s.Create(ctx, s); err != nil {
		t.Fatalf("creating Secret %s/%s: %v", s.Namespace, s.Name, err)
	}
	return s
}

// syncOption shapes a test SecretSync.
type syncOption func(*v1alpha1.SecretSync)

func sourceName(name string) syncOption {
	return func(ss *v1alpha1.SecretSync) { ss.Spec.Source.Name = name }
}

func sourceSelector(labels map[string]string) syncOption {
	return func(ss *v1alpha1.SecretSync) {
		ss.Spec.Source.Selector = &metav1.LabelSelector{MatchLabels: labels}
	}
}

func policy(p v1alpha1.DeletionPolicy) syncOption {
	return func(ss *v1alpha1.SecretSync) { ss.Spec.DeletionPolicy = p }
}

func pullSecretFor(sas ...string) syncOption {
	return func(ss *v1alpha1.SecretSync) { ss.Spec.ImagePullSecretFor = sas }
}

// makeSync is a SecretSync named name that copies from sourceNS into the namespaces labelled
// with the case.
func makeSync(name, sourceNS, caseName string, opts ...syncOption) *v1alpha1.SecretSync {
	ss := &v1alpha1.SecretSync{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SecretSyncSpec{
			Source: v1alpha1.SecretSyncSource{Namespace: sourceNS},
			Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{caseLabel: caseName}}},
		},
	}
	for _, o := range opts {
		o(ss)
	}
	return ss
}

// createSync creates the SecretSync and deletes it when the test ends, waiting until its copies
// are cleaned up so that the next test starts from a quiet controller.
func createSync(t *testing.T, ss *v1alpha1.SecretSync) *v1alpha1.SecretSync {
	t.Helper()
	if err := k8s.Create(ctx, ss); err != nil {
		t.Fatalf("creating SecretSync %s: %v", ss.Name, err)
	}
	name := ss.Name
	t.Cleanup(func() {
		err := k8s.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting SecretSync %s: %v", name, err)
			return
		}
		eventually(t, "the copies of "+name+" are cleaned up", func() error {
			left, err := labelledCopies(name)
			if err != nil {
				return err
			}
			if len(left) > 0 {
				return fmt.Errorf("%d copies left", len(left))
			}
			return nil
		})
	})
	return ss
}

// labelledCopies lists, from the API, the Secrets labelled with the SecretSync's name.
func labelledCopies(name string) ([]corev1.Secret, error) {
	list := &corev1.SecretList{}
	if err := k8s.List(ctx, list, client.MatchingLabels{keys.LabelSecretSync: name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// getSync reads the SecretSync from the API.
func getSync(t *testing.T, name string) *v1alpha1.SecretSync {
	t.Helper()
	ss := &v1alpha1.SecretSync{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: name}, ss); err != nil {
		t.Fatalf("reading SecretSync %s: %v", name, err)
	}
	return ss
}

// getSecret reads a Secret from the API; nil when it does not exist.
func getSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading Secret %s/%s: %v", ns, name, err)
	}
	return s
}

// isCopy checks that s is src's copy made by SecretSync ss with the given deletion policy.
func isCopy(s, src *corev1.Secret, ss string, policy v1alpha1.DeletionPolicy) error {
	if s == nil {
		return errors.New("no copy")
	}
	if s.Type != src.Type {
		return fmt.Errorf("type %q, want %q", s.Type, src.Type)
	}
	if err := sameData(s.Data, src.Data); err != nil {
		return err
	}
	if isTrue(s.Immutable) != isTrue(src.Immutable) {
		return fmt.Errorf("immutable %v, want %v", isTrue(s.Immutable), isTrue(src.Immutable))
	}
	if got := s.Labels[keys.LabelSecretSync]; got != ss {
		return fmt.Errorf("label %s=%q, want %q", keys.LabelSecretSync, got, ss)
	}
	if got, want := s.Annotations[keys.AnnotationSource], src.Namespace+"/"+src.Name; got != want {
		return fmt.Errorf("annotation %s=%q, want %q", keys.AnnotationSource, got, want)
	}
	if got := s.Annotations[keys.AnnotationDeletionPolicy]; got != string(policy) {
		return fmt.Errorf("annotation %s=%q, want %q", keys.AnnotationDeletionPolicy, got, policy)
	}
	if !proofs.Proven(s, keys.LabelSecretSync) {
		return fmt.Errorf("annotation %s=%q is not a valid proof", keys.AnnotationOwnership, s.Annotations[keys.AnnotationOwnership])
	}
	// The manager's cache holds copies by a digest of their data: that record is never written.
	if d, ok := s.Annotations[keys.AnnotationDataDigest]; ok {
		return fmt.Errorf("the cache's annotation %s=%q was written to the copy", keys.AnnotationDataDigest, d)
	}
	return nil
}

// copyIn waits until namespace ns holds src's copy made by ss.
func copyIn(t *testing.T, ns string, src *corev1.Secret, ss string, policy v1alpha1.DeletionPolicy) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	eventually(t, fmt.Sprintf("the copy of %s/%s in %s", src.Namespace, src.Name, ns), func() error {
		got = getSecret(t, ns, src.Name)
		return isCopy(got, src, ss, policy)
	})
	return got
}

// noSecret waits until namespace ns has no Secret of that name.
func noSecret(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, fmt.Sprintf("no Secret %s/%s", ns, name), func() error {
		if s := getSecret(t, ns, name); s != nil {
			return fmt.Errorf("exists with labels %v", s.Labels)
		}
		return nil
	})
}

func sameData(got, want map[string][]byte) error {
	if len(got) != len(want) {
		return fmt.Errorf("data has keys %v, want %v", dataKeys(got), dataKeys(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !bytes.Equal(g, w) {
			return fmt.Errorf("data[%q] = %q, want %q", k, g, w)
		}
	}
	return nil
}

func dataKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isTrue(b *bool) bool { return b != nil && *b }

// statusIs checks the Ready condition (reason, status) and that the status describes the
// current generation.
func statusIs(ss *v1alpha1.SecretSync, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(ss.Status.Conditions, copyplan.ConditionReady)
	if c == nil {
		return errors.New("no Ready condition")
	}
	if c.Status != status || c.Reason != reason {
		return fmt.Errorf("Ready=%s reason %s (%s), want %s reason %s", c.Status, c.Reason, c.Message, status, reason)
	}
	if ss.Status.ObservedGeneration != ss.Generation || c.ObservedGeneration != ss.Generation {
		return fmt.Errorf("observedGeneration %d (condition %d), generation %d", ss.Status.ObservedGeneration, c.ObservedGeneration, ss.Generation)
	}
	return nil
}

// waitReady waits until the SecretSync is Ready with reason Synced and synced == desired == n.
func waitReady(t *testing.T, name string, n int32) *v1alpha1.SecretSync {
	t.Helper()
	var ss *v1alpha1.SecretSync
	eventually(t, "SecretSync "+name+" is Ready", func() error {
		ss = getSync(t, name)
		if err := statusIs(ss, metav1.ConditionTrue, "Synced"); err != nil {
			return err
		}
		if ss.Status.Desired != n || ss.Status.Synced != n {
			return fmt.Errorf("synced %d/%d, want %d/%d", ss.Status.Synced, ss.Status.Desired, n, n)
		}
		return nil
	})
	return ss
}

// waitReason waits until the SecretSync's Ready condition is False with reason.
func waitReason(t *testing.T, name, reason string) *v1alpha1.SecretSync {
	t.Helper()
	var ss *v1alpha1.SecretSync
	eventually(t, "SecretSync "+name+" reports "+reason, func() error {
		ss = getSync(t, name)
		return statusIs(ss, metav1.ConditionFalse, reason)
	})
	return ss
}

// warningEvents lists the Warning events.k8s.io/v1 Events about the SecretSync with reason.
func warningEvents(t *testing.T, ssName, reason string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "SecretSync" && e.Regarding.Name == ssName && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// eventsAbout counts the events.k8s.io/v1 Events about the SecretSync.
func eventsAbout(t *testing.T, ssName string) int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Kind == "SecretSync" && e.Regarding.Name == ssName {
			n++
		}
	}
	return n
}

// writes is the number of API writes the controller counted for the SecretSync (all operations).
func writes(t *testing.T, ssName string) float64 {
	t.Helper()
	return sumMetric(t, metricsRegistry, "platform_operators_secretsync_writes_total", map[string]string{"secretsync": ssName})
}

// reconciles is controller-runtime's count of finished reconciles of the controller.
func reconciles(t *testing.T) float64 {
	t.Helper()
	return sumMetric(t, crmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": Name}) +
		sumMetric(t, crmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": TargetName})
}

// controllerBusy is the two controllers' queued plus in-flight work.
func controllerBusy(t *testing.T) float64 {
	t.Helper()
	busy := 0.0
	for _, n := range []string{Name, TargetName} {
		busy += sumMetric(t, crmetrics.Registry, "workqueue_depth", map[string]string{"name": n}) +
			sumMetric(t, crmetrics.Registry, "controller_runtime_active_workers", map[string]string{"controller": n})
	}
	return busy
}

// settle waits until at least one more reconcile has finished than before, and then until the
// controllers are idle, past the SecretSync's pass a namespace or copy event queues for later
// (wholePassDelay, copyPassDelay). It is the barrier before asserting that nothing was written.
func settle(t *testing.T, before float64) {
	t.Helper()
	eventually(t, "a reconcile has run", func() error {
		if n := reconciles(t); n <= before {
			return fmt.Errorf("reconciles %v, still %v", n, before)
		}
		return nil
	})
	idle(t)
	time.Sleep(max(wholePassDelay, copyPassDelay))
	idle(t)
}

// idle waits until the controller has had no queued or running work for a few polls in a row.
// (Work scheduled for later, RequeueAfter, is not seen: see quiet.)
func idle(t *testing.T) {
	t.Helper()
	still := 0
	eventually(t, "the controller is idle", func() error {
		if controllerBusy(t) > 0 {
			still = 0
			return errors.New("work queued or running")
		}
		if still++; still < 5 {
			return errors.New("idle, checking again")
		}
		return nil
	})
}

// writeRequestsBy is the API server's count of write requests (create, update, patch, apply,
// delete) to the resources the controller writes: Secrets, ServiceAccounts and SecretSyncs
// (and their status), by "verb resource/subresource". Unlike the controller's own counter it
// also sees writes that change nothing, such as an empty status patch. Events are not counted
// here: the API server counts them for the whole suite (an Event series of another test's object
// is patched whenever its Event repeats); count a SecretSync's Events by object (eventsAbout).
func writeRequestsBy(t *testing.T) map[string]float64 {
	t.Helper()
	raw, err := apiserver.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	verbs := map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}
	resources := map[string]bool{"secrets": true, "serviceaccounts": true, "secretsyncs": true}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		if !verbs[l["verb"]] || !resources[l["resource"]] {
			continue
		}
		var f float64
		if _, err := fmt.Sscan(value, &f); err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		out[l["verb"]+" "+l["resource"]+"/"+l["subresource"]] += f
	}
	return out
}

// diffRequests names the write requests that differ between two writeRequestsBy.
func diffRequests(before, after map[string]float64) string {
	var out []string
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out = append(out, fmt.Sprintf("%s +%v", k, d))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// sumMetric sums the samples of a counter or gauge family whose labels include want.
func sumMetric(t *testing.T, g prometheus.Gatherer, family string, want map[string]string) float64 {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsInclude(m, want) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func labelsInclude(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rvs records the resourceVersions of objects, keyed by kind/namespace/name.
func rvs(objs ...client.Object) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		out[fmt.Sprintf("%T/%s/%s", o, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
	}
	return out
}

// diffRVs names what changed between two records.
func diffRVs(before, after map[string]string) string {
	var changed []string
	for k, v := range before {
		if after[k] != v {
			changed = append(changed, fmt.Sprintf("%s: %s -> %s", k, v, after[k]))
		}
	}
	sort.Strings(changed)
	return strings.Join(changed, "; ")
}
