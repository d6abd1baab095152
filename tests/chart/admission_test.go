package chart

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// The chart's admission policies, FlowSchemas and Pod Security labels, rendered with the Helm
// library and applied to a real kube-apiserver (envtest's, from KUBEBUILDER_ASSETS), then
// exercised as the manager's ServiceAccount and as a tenant through impersonation: the API
// server's own CEL, RBAC and Pod Security admission decide, not a reimplementation.

const (
	apiTenantNS   = "team-a"
	apiTenantUser = "alice"
	// apiOtherNS is a namespace the tenant has no rights in (the manager's copies go there too).
	apiOtherNS = "team-b"
)

// apiServer is the started API server with an admin client and clients impersonating the
// manager's ServiceAccount and the tenant.
type apiServer struct {
	ctx                    context.Context
	admin, manager, tenant client.Client
	// managerUser is the manager's user name as the API server sees it.
	managerUser string
}

// startAPIServer starts envtest's kube-apiserver and etcd and stops them when the test ends.
func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make test-go`, which points it at bin/ (built by `make tools`)")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}

// serverVersion is the Kubernetes version the API server at cfg reports (e.g. v1.30.14).
func serverVersion(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server version %s", v.GitVersion)
	return v.GitVersion
}

// impersonating returns a client acting as user with groups.
func impersonating(t *testing.T, cfg *rest.Config, user string, groups ...string) client.Client {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	cl, err := client.New(c, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// installRendered creates every rendered object (namespaces first) as the admin, as Helm would.
func installRendered(t *testing.T, ctx context.Context, admin client.Client, r rendered) {
	t.Helper()
	var others []client.Object
	for _, o := range r.objects {
		obj, ok := o.(client.Object)
		if !ok {
			t.Fatalf("rendered %T is not an object", o)
		}
		if _, isNS := obj.(*corev1.Namespace); isNS {
			if err := admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
			}
			continue
		}
		others = append(others, obj)
	}
	for _, obj := range others {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

// startWithChart starts an API server and installs the chart rendered with valuesText (plus a
// tenant namespace and the manager's namespace), gives the tenant user a namespace admin's rights
// in its namespace, and waits until every policy of the chart is in force. managerEverywhere
// binds the manager to cluster-admin besides the chart's RBAC, so that its requests reach
// admission in namespaces the chart gives it no rights in (rbac.scope=namespaced).
func startWithChart(t *testing.T, valuesText string, managerEverywhere bool) *apiServer {
	t.Helper()
	cfg := startAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	admin, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{namespace, apiOtherNS} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// Rendered for the version this API server reports, as `helm upgrade -i` against it would:
	// `make test-oldest-kube` runs these tests on the oldest minor Chart.yaml declares.
	r, err := renderFor(t, serverVersion(t, cfg), loadChart(t), releaseName, parseValues(t, valuesText), nil)
	if err != nil {
		t.Fatal(err)
	}
	installRendered(t, ctx, admin, r)
	// What a namespace admin may do to the kinds the policies guard. (The built-in `admin` role is
	// filled by kube-controller-manager's aggregation, which envtest does not run.)
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	if err := admin.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "namespace-admin", Namespace: apiTenantNS},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps", "serviceaccounts", "pods"}, Verbs: all},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: all},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-admin", Namespace: apiTenantNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "namespace-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: apiTenantUser}},
	}); err != nil {
		t.Fatal(err)
	}
	if managerEverywhere {
		if err := admin.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "manager-everywhere"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: releaseName, Namespace: namespace}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	managerUser := "system:serviceaccount:" + namespace + ":" + releaseName
	s := &apiServer{
		ctx:         ctx,
		admin:       admin,
		manager:     impersonating(t, cfg, managerUser, "system:serviceaccounts", "system:serviceaccounts:"+namespace),
		tenant:      impersonating(t, cfg, apiTenantUser),
		managerUser: managerUser,
	}
	s.waitForPolicies(t, r)
	return s
}

// waitForPolicies waits until the API server enforces each rendered policy: policies are
// compiled asynchronously after they are created. Each probe is a dry-run request its policy
// refuses.
func (s *apiServer) waitForPolicies(t *testing.T, r rendered) {
	t.Helper()
	probes := map[string]func() error{
		releaseName + "-ownership-keys": func() error {
			return s.tenant.Create(s.ctx, secret(apiTenantNS, "probe", map[string]string{keys.LabelSecretSync: "x"}, nil), client.DryRunAll)
		},
		releaseName + "-manager-writes": func() error {
			return s.manager.Create(s.ctx, secret(apiOtherNS, "probe", nil, nil), client.DryRunAll)
		},
		releaseName + "-manager-jobs": func() error {
			return s.manager.Create(s.ctx, job(apiOtherNS, "probe", nil), client.DryRunAll)
		},
		// Also waits for the CRDs: until SecretSync is served the create is NotFound.
		releaseName + "-sources": func() error {
			return s.admin.Create(s.ctx, copyRequest(apiTenantNS, "probe", "kube-system"), client.DryRunAll)
		},
	}
	for _, p := range objectsOf[*admissionregistrationv1.ValidatingAdmissionPolicy](r) {
		probe, ok := probes[p.Name]
		if !ok {
			t.Fatalf("no probe for policy %s: add one to waitForPolicies", p.Name)
		}
		var err error
		if wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			err = probe()
			return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+p.Name+"'"), nil
		}) != nil {
			t.Fatalf("policy %s not in force after 60s; the probe got %v", p.Name, err)
		}
	}
}

func secret(ns, name string, labels, annotations map[string]string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		StringData: map[string]string{"k": "v"},
	}
}

func configMap(ns, name string, labels, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Data:       map[string]string{"k": "v"},
	}
}

func job(ns, name string, labels map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
}

// secretSync is a SecretSync (unstructured: the test's scheme has no types of ours) copying
// every Secret of sourceNS.
func secretSync(name, sourceNS string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "SecretSync",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"source": map[string]any{"namespace": sourceNS, "selector": map[string]any{}}},
	}}
	return u
}

// copyRequest is a CopyRequest in ns of the Secret "pull" of sourceNS.
func copyRequest(ns, name, sourceNS string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "CopyRequest",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"source": map[string]any{"namespace": sourceNS, "name": "pull"}},
	}}
}

// refusedBy asserts that err is the API server refusing the request through policy with a
// message holding every one of want.
func refusedBy(t *testing.T, err error, policy string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("allowed; want refused by %s", policy)
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("err = %v (%T), want Forbidden by %s", err, err, policy)
	}
	msg := err.Error()
	if !strings.Contains(msg, "ValidatingAdmissionPolicy '"+releaseName+"-"+policy+"'") {
		t.Fatalf("refused, but not by policy %s: %v", policy, err)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q: %s", w, msg)
		}
	}
}

func allowed(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// apiTenantValues: a tenant namespace created by the chart, everything else at the defaults.
const apiTenantValues = "tenants:\n  - namespace: " + apiTenantNS + "\n"

// TestChartOnARealAPIServer installs the chart (cluster scope, one tenant) into one API server and
// tries it: the admission policies as a tenant, an admin and the manager; Pod Security in the
// tenant namespace; the flow-control objects.
func TestChartOnARealAPIServer(t *testing.T) {
	s := startWithChart(t, apiTenantValues, false)
	t.Run("admission policies", func(t *testing.T) { testAdmissionPolicies(t, s) })
	t.Run("Pod Security", func(t *testing.T) { testPodSecurity(t, s) })
	t.Run("flow control", func(t *testing.T) { testFlowControl(t, s) })
}

func testAdmissionPolicies(t *testing.T, s *apiServer) {
	ctx := s.ctx

	// A copy the manager made in the tenant's namespace, and one in another namespace.
	ours := map[string]string{keys.LabelSecretSync: "pull"}
	copyAnn := map[string]string{keys.AnnotationSource: "secretsync/pull", keys.AnnotationDeletionPolicy: "Delete"}
	allowed(t, "the manager creates a labelled copy in a tenant namespace", s.manager.Create(ctx, secret(apiTenantNS, "pull", ours, copyAnn)))
	allowed(t, "the manager creates a labelled ConfigMap copy (CopyRequest)", s.manager.Create(ctx, configMap(apiTenantNS, "ca", map[string]string{keys.LabelCopyRequest: "ca"}, nil)))
	allowed(t, "the manager creates a Job with its label", s.manager.Create(ctx, job(apiTenantNS, "run-1", map[string]string{keys.LabelCreatedBy: "at"})))
	allowed(t, "the tenant creates its own Secret", s.tenant.Create(ctx, secret(apiTenantNS, "mine", nil, nil)))
	allowed(t, "the tenant creates its own Job", s.tenant.Create(ctx, job(apiTenantNS, "mine", nil)))

	get := func(t *testing.T, obj client.Object) {
		t.Helper()
		if err := s.admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a tenant cannot put our ownership label on a Secret it creates", func(t *testing.T) {
		err := s.tenant.Create(ctx, secret(apiTenantNS, "fake-copy", map[string]string{keys.LabelSecretSync: "pull"}, nil))
		refusedBy(t, err, "ownership-keys", "only the platform-operators manager ("+s.managerUser+")", "label "+keys.LabelSecretSync, "secrets "+apiTenantNS+"/fake-copy")
	})
	t.Run("a tenant cannot label its own Secret as a copy to get it deleted", func(t *testing.T) {
		mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: apiTenantNS}}
		get(t, mine)
		mine.Labels = map[string]string{keys.LabelSecretSync: "pull"}
		refusedBy(t, s.tenant.Update(ctx, mine), "ownership-keys", "label "+keys.LabelSecretSync)
	})
	t.Run("a tenant cannot set any annotation of ours, an ownership proof included", func(t *testing.T) {
		err := s.tenant.Create(ctx, configMap(apiTenantNS, "proof", nil, map[string]string{keys.Prefix + "owner-proof": "forged", keys.AnnotationSource: "secretsync/x"}))
		refusedBy(t, err, "ownership-keys", "annotation "+keys.Prefix+"owner-proof", "annotation "+keys.AnnotationSource)
	})
	t.Run("a tenant cannot change or remove our keys on a copy", func(t *testing.T) {
		c := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: apiTenantNS}}
		get(t, c)
		c.Labels[keys.LabelSecretSync] = "other"
		refusedBy(t, s.tenant.Update(ctx, c), "ownership-keys", "label "+keys.LabelSecretSync)
		get(t, c)
		delete(c.Annotations, keys.AnnotationDeletionPolicy)
		refusedBy(t, s.tenant.Update(ctx, c), "ownership-keys", "annotation "+keys.AnnotationDeletionPolicy)
	})
	t.Run("a tenant may still edit a copy's data and its own keys (the manager repairs the data)", func(t *testing.T) {
		c := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: apiTenantNS}}
		get(t, c)
		c.Data["k"] = []byte("changed")
		c.Labels["team"] = "a"
		allowed(t, "editing data and a foreign label of a copy", s.tenant.Update(ctx, c))
	})
	t.Run("a copy is never an offer", func(t *testing.T) {
		c := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: apiTenantNS}}
		get(t, c)
		c.Labels[keys.LabelOffer] = "true"
		c.Annotations[keys.AnnotationOfferNamespaces] = "*"
		refusedBy(t, s.tenant.Update(ctx, c), "ownership-keys", "a copy made by platform-operators cannot be offered", "secrets "+apiTenantNS+"/pull")
	})
	t.Run("a source owner may still offer its own Secret, and anyone may set run-now", func(t *testing.T) {
		allowed(t, "an offer", s.tenant.Create(ctx, secret(apiTenantNS, "offered",
			map[string]string{keys.LabelOffer: "true"}, map[string]string{keys.AnnotationOfferNamespaces: "team-*"})))
		allowed(t, "run-now is a user's key", s.tenant.Create(ctx, configMap(apiTenantNS, "run-now", nil, map[string]string{keys.AnnotationRunNow: "1"})))
	})
	t.Run("a tenant cannot make a Job look like the manager's", func(t *testing.T) {
		err := s.tenant.Create(ctx, job(apiTenantNS, "fake-run", map[string]string{keys.LabelCreatedBy: "scheduledjob"}))
		refusedBy(t, err, "ownership-keys", "label "+keys.LabelCreatedBy, "jobs "+apiTenantNS+"/fake-run")
	})
	t.Run("a tenant cannot make the manager believe it added imagePullSecrets to a ServiceAccount", func(t *testing.T) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: apiTenantNS}}
		allowed(t, "creating the default ServiceAccount (no controller-manager here)", s.admin.Create(ctx, sa))
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+keys.AnnotationPullSecrets+`":"theirs"}}}`))
		refusedBy(t, s.tenant.Patch(ctx, sa, patch), "ownership-keys", "annotation "+keys.AnnotationPullSecrets)
		allowed(t, "the manager records its imagePullSecrets", s.manager.Patch(ctx, sa, patch))
	})
	t.Run("not even a cluster admin sets our keys (Helm, GitOps and restores included)", func(t *testing.T) {
		err := s.admin.Create(ctx, secret(apiTenantNS, "restored-copy", map[string]string{keys.LabelSecretSync: "pull"}, nil))
		refusedBy(t, err, "ownership-keys", "label "+keys.LabelSecretSync)
	})

	t.Run("the manager cannot create, update or delete a Secret or ConfigMap without its label", func(t *testing.T) {
		refusedBy(t, s.manager.Create(ctx, secret(apiOtherNS, "unlabelled", nil, nil)), "manager-writes",
			"the platform-operators manager may create secrets only when they carry the "+keys.LabelSecretSync+" or "+keys.LabelCopyRequest+" label; "+apiOtherNS+"/unlabelled does not")
		refusedBy(t, s.manager.Create(ctx, configMap(apiOtherNS, "unlabelled", nil, nil)), "manager-writes", "may create configmaps")
		mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: apiTenantNS}}
		get(t, mine)
		mine.Labels = map[string]string{keys.LabelSecretSync: "pull"}
		mine.Data = map[string][]byte{"k": []byte("clobbered")}
		refusedBy(t, s.manager.Update(ctx, mine), "manager-writes", "may update secrets", apiTenantNS+"/mine does not")
		refusedBy(t, s.manager.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: apiTenantNS}}), "manager-writes", "may delete secrets")
		get(t, mine)
		if string(mine.Data["k"]) != "v" || mine.Labels[keys.LabelSecretSync] != "" {
			t.Errorf("the tenant's Secret changed: labels %v, data %q", mine.Labels, mine.Data["k"])
		}
	})
	t.Run("the manager updates, releases and deletes its copies, and writes freely in its own namespace", func(t *testing.T) {
		c := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: apiTenantNS}}
		get(t, c)
		c.Data["k"] = []byte("v")
		delete(c.Labels, keys.LabelOffer)
		delete(c.Annotations, keys.AnnotationOfferNamespaces)
		allowed(t, "repairing a copy", s.manager.Update(ctx, c))
		get(t, c)
		delete(c.Labels, keys.LabelSecretSync)
		delete(c.Annotations, keys.AnnotationSource)
		delete(c.Annotations, keys.AnnotationDeletionPolicy)
		allowed(t, "releasing a copy (deletionPolicy Orphan drops our keys)", s.manager.Update(ctx, c))
		allowed(t, "deleting a copy", s.manager.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: apiTenantNS}}))
		allowed(t, "a Secret of its own in its namespace", s.manager.Create(ctx, secret(namespace, "manager-key", nil, nil)))
	})
	t.Run("an admin's SecretSync or CopyRequest never has the manager's namespace as its source", func(t *testing.T) {
		refusedBy(t, s.admin.Create(ctx, secretSync("everything", namespace), client.DryRunAll), "sources",
			"secretsyncs everything: spec.source.namespace "+namespace+" is the namespace of the platform-operators manager", "admissionPolicies.allowedSourceNamespaces")
		refusedBy(t, s.manager.Create(ctx, secretSync("everything", namespace), client.DryRunAll), "sources", "is the namespace of the platform-operators manager")
		refusedBy(t, s.admin.Create(ctx, copyRequest(apiTenantNS, "key", namespace), client.DryRunAll), "sources", "is the namespace of the platform-operators manager")
		refusedBy(t, s.admin.Create(ctx, copyRequest(apiTenantNS, "tokens", "kube-system"), client.DryRunAll), "sources",
			"copyrequests "+apiTenantNS+"/tokens: spec.source.namespace kube-system is a kube-* namespace")
		allowed(t, "a SecretSync of another namespace", s.admin.Create(ctx, secretSync("other", apiOtherNS), client.DryRunAll))
		allowed(t, "a CopyRequest of another namespace", s.admin.Create(ctx, copyRequest(apiTenantNS, "other", apiOtherNS), client.DryRunAll))
		// The CRD's own rule, whatever the chart's values.
		if err := s.admin.Create(ctx, secretSync("system", "kube-system"), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "source.namespace may not be a kube-* namespace") {
			t.Errorf("a SecretSync of kube-system: %v, want the CRD's refusal", err)
		}
	})
	t.Run("the manager creates and deletes only its own Jobs, and never in the system namespaces", func(t *testing.T) {
		refusedBy(t, s.manager.Create(ctx, job(apiTenantNS, "unlabelled", nil)), "manager-jobs",
			"may create only Jobs that carry the "+keys.LabelCreatedBy+" label; "+apiTenantNS+"/unlabelled does not")
		refusedBy(t, s.manager.Create(ctx, job("kube-system", "run", map[string]string{keys.LabelCreatedBy: "at"})), "manager-jobs",
			"may not create Jobs in namespace kube-system (never in kube-system, kube-public or kube-node-lease)")
		refusedBy(t, s.manager.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: apiTenantNS}}), "manager-jobs", "may delete only Jobs that carry")
		allowed(t, "deleting its own Job", s.manager.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "run-1", Namespace: apiTenantNS}}))
	})
}

func TestAdmissionPoliciesInNamespacedScope(t *testing.T) {
	// The manager also gets cluster-admin: its requests in team-b then reach admission, and the
	// policy alone keeps it out.
	s := startWithChart(t, apiTenantValues+"secretSync:\n  enabled: false\nrbac:\n  scope: namespaced\n  namespaces: ["+apiTenantNS+"]\n", true)
	allowed(t, "a Job in a listed namespace", s.manager.Create(s.ctx, job(apiTenantNS, "run", map[string]string{keys.LabelCreatedBy: "at"})))
	refusedBy(t, s.manager.Create(s.ctx, job(apiOtherNS, "run", map[string]string{keys.LabelCreatedBy: "at"})), "manager-jobs",
		"may not create Jobs in namespace "+apiOtherNS+" (rbac.scope=namespaced: only in "+apiTenantNS+")")
}

// admissionPolicies.allowedSourceNamespaces, the documented switch, lets a named namespace be a
// source; the others stay refused.
// The chart's own pull-secret SecretSync (pullSecret.sync) of a Secret in the release namespace is
// the one exception, for that one Secret by name.
func TestAllowedSourceNamespaces(t *testing.T) {
	s := startWithChart(t, apiTenantValues+"admissionPolicies:\n  allowedSourceNamespaces: ["+apiOtherNS+"]\n"+
		"pullSecret:\n  name: registry-pull\n  namespace: "+namespace+"\n  sync:\n    enabled: true\n", false)
	allowed(t, "a SecretSync of an allowed namespace", s.admin.Create(s.ctx, secretSync("allowed", apiOtherNS), client.DryRunAll))
	allowed(t, "a CopyRequest of an allowed namespace", s.admin.Create(s.ctx, copyRequest(apiTenantNS, "allowed", apiOtherNS), client.DryRunAll))
	refusedBy(t, s.admin.Create(s.ctx, copyRequest(apiTenantNS, "tokens", "kube-system"), client.DryRunAll), "sources", "is a kube-* namespace")

	pullSync := secretSync(releaseName+"-pull-secret", namespace)
	_ = unstructured.SetNestedMap(pullSync.Object, map[string]any{"namespace": namespace, "name": "registry-pull"}, "spec", "source")
	allowed(t, "the chart's pull-secret SecretSync, applied by the manager", s.manager.Create(s.ctx, pullSync, client.DryRunAll))
	refusedBy(t, s.manager.Create(s.ctx, secretSync(releaseName+"-pull-secret", namespace), client.DryRunAll), "sources", "is the namespace of the platform-operators manager")
	other := secretSync("copy-the-key", namespace)
	_ = unstructured.SetNestedMap(other.Object, map[string]any{"namespace": namespace, "name": "platform-operators-ownership-key"}, "spec", "source")
	refusedBy(t, s.admin.Create(s.ctx, other, client.DryRunAll), "sources", "is the namespace of the platform-operators manager")
}

// testPodSecurity asks the API server's Pod Security admission about pods in the chart's tenant
// namespace: a root pod is refused, and every pod the chart runs (the manager's and the helm test
// pod) meets `restricted`.
func testPodSecurity(t *testing.T, s *apiServer) {
	ctx := s.ctx
	r, err := render(t, loadChart(t), releaseName, parseValues(t, apiTenantValues))
	if err != nil {
		t.Fatal(err)
	}
	// The ServiceAccounts the pods name (no controller-manager creates `default` here).
	for _, sa := range []string{"default", releaseName} {
		if err := s.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: apiTenantNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	pod := func(name string, spec corev1.PodSpec) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: apiTenantNS}, Spec: spec}
	}
	root := pod("root", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
		SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}})
	err = s.tenant.Create(ctx, root, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
		t.Fatalf("a privileged root pod in the tenant namespace: err = %v, want refused by PodSecurity restricted:latest", err)
	}
	managerPod := only[*appsv1.Deployment](t, r).Spec.Template.Spec
	if err := s.admin.Create(ctx, pod("manager", managerPod), client.DryRunAll); err != nil {
		t.Errorf("the manager's pod does not meet restricted: %v", err)
	}
	var tests int
	for _, h := range r.hooks {
		if p, ok := h.(*corev1.Pod); ok {
			tests++
			if err := s.admin.Create(ctx, pod(p.Name, p.Spec), client.DryRunAll); err != nil {
				t.Errorf("the helm test pod %s does not meet restricted: %v", p.Name, err)
			}
		}
	}
	if tests == 0 {
		t.Fatal("no helm test pod rendered")
	}
}

// testFlowControl: the API server accepted the chart's FlowSchemas and priority level and reports
// neither FlowSchema as dangling (the leader-election level is the API server's own).
func testFlowControl(t *testing.T, s *apiServer) {
	var schemas flowcontrolv1.FlowSchemaList
	if err := s.admin.List(s.ctx, &schemas, client.MatchingLabels{"app.kubernetes.io/instance": releaseName}); err != nil {
		t.Fatal(err)
	}
	if len(schemas.Items) != 2 {
		t.Fatalf("%d FlowSchemas of the release, want 2", len(schemas.Items))
	}
	for _, fs := range schemas.Items {
		var dangling *flowcontrolv1.FlowSchemaCondition
		if err := wait.PollUntilContextTimeout(s.ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			var live flowcontrolv1.FlowSchema
			if err := s.admin.Get(ctx, client.ObjectKeyFromObject(&fs), &live); err != nil {
				return false, err
			}
			dangling = flowSchemaCondition(live, flowcontrolv1.FlowSchemaConditionDangling)
			return dangling != nil, nil
		}); err != nil {
			if wait.Interrupted(err) {
				t.Fatalf("FlowSchema %s got no Dangling condition in 60s", fs.Name)
			}
			t.Fatal(err)
		}
		if dangling.Status != flowcontrolv1.ConditionFalse {
			t.Fatalf("FlowSchema %s is dangling: %s", fs.Name, dangling.Message)
		}
	}
}

func flowSchemaCondition(fs flowcontrolv1.FlowSchema, typ flowcontrolv1.FlowSchemaConditionType) *flowcontrolv1.FlowSchemaCondition {
	for i := range fs.Status.Conditions {
		if fs.Status.Conditions[i].Type == typ {
			return &fs.Status.Conditions[i]
		}
	}
	return nil
}
