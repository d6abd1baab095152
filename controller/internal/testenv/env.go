package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/jobs"
)

// Env is a started envtest API server with the chart's CRDs and a manager whose cache holds
// the manager's Jobs, indexed by controller UID, as in production.
type Env struct {
	Manager ctrl.Manager
	Client  client.Client
	// Admin is a cluster-admin client: the manager's own client, except in StartAsChartManager.
	Admin client.Client
	Ctx   context.Context
}

// crdInstall gives the CRDs a minute to be served (envtest's default: 10 s). On two cores shared
// with `make test`'s other lanes, the API server took longer and a test failed before it began.
var crdInstall = envtest.CRDInstallOptions{MaxTime: time.Minute}

// StartAPIServer starts envtest's kube-apiserver and etcd (from KUBEBUILDER_ASSETS) with the
// chart's CRDs installed, stops them when the test ends, and returns the admin config.
func StartAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	cfg, stop, err := StartSuite()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	return cfg
}

// StartSuite is StartAPIServer for a package's TestMain, where one API server serves every
// test: it installs the chart's CRDs (only the files named, when any are: a suite then depends
// on no other CRD) and returns the admin config and the function that stops the API server.
func StartSuite(crdFiles ...string) (*rest.Config, func() error, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, nil, errors.New("KUBEBUILDER_ASSETS is not set: run through `make test-go`, which points it at bin/ (built by `make tools`)")
	}
	crds := filepath.Join(chartDir(), "files", "crds")
	paths := []string{crds}
	if len(crdFiles) > 0 {
		paths = nil
		for _, f := range crdFiles {
			paths = append(paths, filepath.Join(crds, f))
		}
	}
	env := &envtest.Environment{CRDDirectoryPaths: paths, ErrorIfCRDPathMissing: true, CRDInstallOptions: crdInstall}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting envtest: %w", err)
	}
	return cfg, env.Stop, nil
}

// chartDir is the chart's directory in the repository.
func chartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "charts", "platform-operators")
}

// StartAsChartManager is Start with the manager running as the chart deploys it on a hardened
// cluster: the API server has the OwnerReferencesPermissionEnforcement admission plugin on
// (OpenShift, OKD), and the manager's client is a user bound to the chart's ClusterRole
// (files/rbac/role.yaml, generated from the RBAC markers) instead of cluster admin, so a write
// that the chart's rules or the plugin refuse fails here as it does there. Env.Admin is the
// cluster admin, for the test's own objects.
func StartAsChartManager(t *testing.T, setup func(mgr ctrl.Manager) error) *Env {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make test-go`, which points it at bin/ (built by `make tools`)")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(chartDir(), "files", "crds")}, ErrorIfCRDPathMissing: true, CRDInstallOptions: crdInstall}
	env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	adminCfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := Scheme(t)
	admin, err := client.New(adminCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	const user = "system:serviceaccount:platform-operators:platform-operators"
	data, err := os.ReadFile(filepath.Join(chartDir(), "files", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil || len(role.Rules) == 0 {
		t.Fatalf("files/rbac/role.yaml: %v (%d rules)", err, len(role.Rules))
	}
	role.ObjectMeta = metav1.ObjectMeta{Name: "platform-operators-manager"}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "platform-operators-manager"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, obj := range []client.Object{&role, binding} {
		if err := admin.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	u, err := env.AddUser(envtest.User{Name: user}, adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, u.Config(), scheme, setup)
	e.Admin = admin
	return e
}

// Scheme knows the built-in kinds and ours.
func Scheme(t *testing.T) *k8sruntime.Scheme {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	add := k8sruntime.NewSchemeBuilder(clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	if err := add.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// Start starts envtest and the manager (controllers are added by setup before the start).
func Start(t *testing.T, setup func(mgr ctrl.Manager) error) *Env {
	t.Helper()
	e := start(t, StartAPIServer(t), Scheme(t), setup)
	e.Admin = e.Client
	return e
}

// CacheKinds are the cache kinds of the package under test besides Jobs (which testenv cannot
// import: that package's tests import testenv), each with its bound as the manager declares it:
// a test package sets them in an init function.
var CacheKinds []cachebounds.Kind

// start builds and starts a manager on cfg, its cache configured as the manager's.
func start(t *testing.T, cfg *rest.Config, scheme *k8sruntime.Scheme, setup func(mgr ctrl.Manager) error) *Env {
	t.Helper()
	opts := ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: new(true)}, // several tests of a package register the same controller name
	}
	if err := cachebounds.ManagerOptions(cachebounds.Inventory{Name: "testenv", Kinds: append([]cachebounds.Kind{jobs.CacheKind()}, CacheKinds...)}, cache.Options{}, &opts); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := jobs.IndexByControllerUID(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		if err := setup(mgr); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache never synced")
	}
	return &Env{Manager: mgr, Client: mgr.GetClient(), Ctx: ctx}
}

// Namespace creates a namespace for one test.
func (e *Env) Namespace(t *testing.T, name string) string {
	t.Helper()
	if err := e.Admin.Create(e.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// NoJobsQuota creates, in ns, a ResourceQuota that allows no Job (count/jobs.batch=0), with the
// status the quota controller (which envtest does not run) would write, so admission refuses
// every Job create. Deleting it (then waiting until the API server no longer has it) lifts it.
func (e *Env) NoJobsQuota(t *testing.T, ns string) *corev1.ResourceQuota {
	t.Helper()
	zero := corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-jobs"},
		Spec: corev1.ResourceQuotaSpec{Hard: zero}}
	if err := e.Client.Create(e.Ctx, quota); err != nil {
		t.Fatal(err)
	}
	quota.Status = corev1.ResourceQuotaStatus{Hard: zero, Used: zero}
	if err := e.Client.Status().Update(e.Ctx, quota); err != nil {
		t.Fatal(err)
	}
	return quota
}

// Eventually polls cond every 50ms for up to 10s and fails the test with msg if it never holds.
func Eventually(t *testing.T, msg string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("timed out: %s", msg)
	}
}

// WaitCacheCurrent waits until the manager's cache holds obj at the API server's current
// resourceVersion, so a directly called Reconcile reads what the test just wrote.
func WaitCacheCurrent(t *testing.T, e *Env, obj client.Object) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	live := obj.DeepCopyObject().(client.Object)
	if err := e.Manager.GetAPIReader().Get(e.Ctx, key, live); err != nil {
		t.Fatal(err)
	}
	cached := obj.DeepCopyObject().(client.Object)
	Eventually(t, "the cache catches up with "+key.String(), func() bool {
		return e.Client.Get(e.Ctx, key, cached) == nil && cached.GetResourceVersion() == live.GetResourceVersion()
	})
}
