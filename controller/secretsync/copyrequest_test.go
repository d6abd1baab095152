package secretsync

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

// offer sets (namespaces != "") or withdraws (namespaces == "") the owner's offer on a source.
func offer(t *testing.T, obj client.Object, namespaces string) {
	t.Helper()
	eventually(t, "offering "+obj.GetNamespace()+"/"+obj.GetName(), func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		l, a := obj.GetLabels(), obj.GetAnnotations()
		if l == nil {
			l = map[string]string{}
		}
		if a == nil {
			a = map[string]string{}
		}
		if namespaces == "" {
			delete(l, keys.LabelOffer)
			delete(a, keys.AnnotationOfferNamespaces)
		} else {
			l[keys.LabelOffer] = "true"
			a[keys.AnnotationOfferNamespaces] = namespaces
		}
		obj.SetLabels(l)
		obj.SetAnnotations(a)
		return k8s.Update(ctx, obj)
	})
}

func makeRequest(ns, name string, src v1alpha1.CopyRequestSource, copyName string) *v1alpha1.CopyRequest {
	return &v1alpha1.CopyRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.CopyRequestSpec{Source: src, Name: copyName}}
}

func createRequest(t *testing.T, c client.Client, cr *v1alpha1.CopyRequest) {
	t.Helper()
	if err := c.Create(ctx, cr); err != nil {
		t.Fatalf("creating CopyRequest %s/%s: %v", cr.Namespace, cr.Name, err)
	}
}

// waitRequest waits until the CopyRequest's Ready condition has status and reason for its
// current generation, and returns it.
func waitRequest(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *v1alpha1.CopyRequest {
	t.Helper()
	cr := &v1alpha1.CopyRequest{}
	eventually(t, fmt.Sprintf("CopyRequest %s/%s is %s/%s", ns, name, status, reason), func() error {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cr); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cr.Status.Conditions, copyplan.ConditionReady)
		if c == nil {
			return errors.New("no Ready condition")
		}
		if c.Status != status || c.Reason != reason || c.ObservedGeneration != cr.Generation {
			return fmt.Errorf("Ready=%s %s (%s) for generation %d of %d", c.Status, c.Reason, c.Message, c.ObservedGeneration, cr.Generation)
		}
		return nil
	})
	return cr
}

func requestCopyIn(t *testing.T, ns, name string, src *corev1.Secret, request string) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	eventually(t, fmt.Sprintf("the requested copy %s/%s", ns, name), func() error {
		got = getSecret(t, ns, name)
		if got == nil {
			return errors.New("no copy")
		}
		if got.Labels[keys.LabelCopyRequest] != request || got.Labels[keys.LabelSecretSync] != "" {
			return fmt.Errorf("labels %v", got.Labels)
		}
		if got.Type != src.Type {
			return fmt.Errorf("type %s, want %s", got.Type, src.Type)
		}
		if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Kind != "CopyRequest" || got.OwnerReferences[0].Name != request {
			return fmt.Errorf("owner references %v", got.OwnerReferences)
		}
		if got.Labels[keys.LabelOffer] != "" || got.Annotations[keys.AnnotationOfferNamespaces] != "" {
			return errors.New("the offer travelled to the copy")
		}
		return sameData(got.Data, src.Data)
	})
	return got
}

func requestEvents(t *testing.T, ns, name, reason string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "CopyRequest" && e.Regarding.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// tenantClient is a client for a user who may only manage CopyRequests (and read Secrets) in
// namespace ns: the RBAC a tenant has.
func tenantClient(t *testing.T, ns, user string) client.Client {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"copyrequests"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"get", "list"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Pull mode end to end, from the tenant's side with namespaced RBAC only.
func TestACopyRequestCopiesOnlyWhatIsOfferedToItsNamespace(t *testing.T) {
	const c = "pull"
	platform := namespace(t, c+"-platform", nil)
	tenant := namespace(t, c+"-team-a", nil)
	other := namespace(t, c+"-billing", nil)
	tc := tenantClient(t, tenant, "alice")

	harbor := createSecret(t, makeSecret(platform, "harbor-pull", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"harbor.example.com":{"auth":"eDp5"}}}`)})))
	hidden := createSecret(t, makeSecret(platform, "db-root"))

	t.Log("the tenant cannot read the sources itself")
	if err := tc.Get(ctx, client.ObjectKeyFromObject(harbor), &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant reads %s/%s directly: %v (the test bed must enforce RBAC)", platform, "harbor-pull", err)
	}

	t.Log("a source that is not offered and one that does not exist get the same refusal")
	createRequest(t, tc, makeRequest(tenant, "root", v1alpha1.CopyRequestSource{Namespace: platform, Name: hidden.Name}, ""))
	createRequest(t, tc, makeRequest(tenant, "guess", v1alpha1.CopyRequestSource{Namespace: platform, Name: "no-such-secret"}, ""))
	root := waitRequest(t, tenant, "root", metav1.ConditionFalse, "NotOffered")
	guess := waitRequest(t, tenant, "guess", metav1.ConditionFalse, "NotOffered")
	rootMsg := meta.FindStatusCondition(root.Status.Conditions, copyplan.ConditionReady).Message
	guessMsg := meta.FindStatusCondition(guess.Status.Conditions, copyplan.ConditionReady).Message
	if strings.ReplaceAll(rootMsg, hidden.Name, "X") != strings.ReplaceAll(guessMsg, "no-such-secret", "X") {
		t.Errorf("the refusals tell an existing source from a missing one:\n%s\n%s", rootMsg, guessMsg)
	}
	if !strings.Contains(rootMsg, keys.LabelOffer) {
		t.Errorf("the refusal does not say how to offer: %s", rootMsg)
	}
	noSecret(t, tenant, hidden.Name)
	eventually(t, "a NotOffered Warning Event for the tenant", func() error {
		if len(requestEvents(t, tenant, "root", "NotOffered")) == 0 {
			return errors.New("none yet")
		}
		return nil
	})

	t.Log("offered to another namespace only: still refused")
	offer(t, harbor, other)
	createRequest(t, tc, makeRequest(tenant, "pull", v1alpha1.CopyRequestSource{Namespace: platform, Name: "harbor-pull"}, "regcred"))
	waitRequest(t, tenant, "pull", metav1.ConditionFalse, "NotOffered")
	noSecret(t, tenant, "regcred")

	t.Log("offered by glob: the copy appears under the requested name")
	offer(t, harbor, other+","+c+"-team-*")
	requestCopyIn(t, tenant, "regcred", harbor, "pull")
	cr := waitRequest(t, tenant, "pull", metav1.ConditionTrue, "Copied")
	if cr.Status.Copy != "regcred" || cr.Status.LastSyncTime == nil {
		t.Errorf("status %+v, want copy regcred and a last sync time", cr.Status)
	}
	if err := tc.Get(ctx, types.NamespacedName{Namespace: tenant, Name: "regcred"}, &corev1.Secret{}); err != nil {
		t.Errorf("the tenant cannot read its copy: %v", err)
	}

	t.Log("a source update reaches the copy; an edited copy is repaired; a deleted one recreated")
	harbor = getSecret(t, platform, "harbor-pull")
	harbor.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"harbor.example.com":{"auth":"cm90YXRlZA=="}}}`)
	if err := k8s.Update(ctx, harbor); err != nil {
		t.Fatal(err)
	}
	requestCopyIn(t, tenant, "regcred", harbor, "pull")
	updateSecret(t, tenant, "regcred", func(s *corev1.Secret) { s.Data[corev1.DockerConfigJsonKey] = []byte("{}") })
	requestCopyIn(t, tenant, "regcred", harbor, "pull")
	if err := k8s.Delete(ctx, getSecret(t, tenant, "regcred")); err != nil {
		t.Fatal(err)
	}
	requestCopyIn(t, tenant, "regcred", harbor, "pull")

	t.Log("renaming the copy moves it")
	eventually(t, "renaming the copy", func() error {
		cur := &v1alpha1.CopyRequest{}
		if err := tc.Get(ctx, types.NamespacedName{Namespace: tenant, Name: "pull"}, cur); err != nil {
			return err
		}
		cur.Spec.Name = "harbor"
		return tc.Update(ctx, cur)
	})
	requestCopyIn(t, tenant, "harbor", harbor, "pull")
	noSecret(t, tenant, "regcred")

	t.Log("withdrawing the offer takes the copy away")
	offer(t, harbor, other)
	noSecret(t, tenant, "harbor")
	waitRequest(t, tenant, "pull", metav1.ConditionFalse, "NotOffered")
	offer(t, harbor, "*")
	requestCopyIn(t, tenant, "harbor", harbor, "pull")

	t.Log("deleting the CopyRequest deletes the copy")
	if err := tc.Delete(ctx, &v1alpha1.CopyRequest{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "pull"}}); err != nil {
		t.Fatal(err)
	}
	noSecret(t, tenant, "harbor")
	if s := getSecret(t, platform, "harbor-pull"); s == nil {
		t.Error("the source is gone")
	}
}

func TestACopyRequestNeverWritesWhatIsNotItsOwn(t *testing.T) {
	const c = "pullc"
	platform := namespace(t, c+"-platform", nil)
	tenant := namespace(t, c+"-team", nil)
	tc := tenantClient(t, tenant, "bob")
	src := createSecret(t, makeSecret(platform, "token"))
	offer(t, src, tenant)
	theirs := createSecret(t, makeSecret(tenant, "token", withData(map[string][]byte{"mine": []byte("keep")})))

	createRequest(t, tc, makeRequest(tenant, "want-token", v1alpha1.CopyRequestSource{Namespace: platform, Name: "token"}, ""))
	cr := waitRequest(t, tenant, "want-token", metav1.ConditionFalse, "Conflict")
	if msg := meta.FindStatusCondition(cr.Status.Conditions, copyplan.ConditionReady).Message; !strings.Contains(msg, "not managed by platform-operators") {
		t.Errorf("conflict message %q", msg)
	}
	if s := getSecret(t, tenant, "token"); s.ResourceVersion != theirs.ResourceVersion || string(s.Data["mine"]) != "keep" {
		t.Errorf("their Secret was written: %+v", s)
	}

	t.Log("a second request for the same copy name is refused, the first keeps it")
	if err := k8s.Delete(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	requestCopyIn(t, tenant, "token", src, "want-token")
	createRequest(t, tc, makeRequest(tenant, "also-token", v1alpha1.CopyRequestSource{Namespace: platform, Name: "token"}, ""))
	cr = waitRequest(t, tenant, "also-token", metav1.ConditionFalse, "Conflict")
	if msg := meta.FindStatusCondition(cr.Status.Conditions, copyplan.ConditionReady).Message; !strings.Contains(msg, `managed by CopyRequest "want-token"`) {
		t.Errorf("conflict message %q", msg)
	}
	requestCopyIn(t, tenant, "token", src, "want-token")
}

func TestACopyRequestForAConfigMap(t *testing.T) {
	const c = "pullcm"
	platform := namespace(t, c+"-platform", nil)
	tenant := namespace(t, c+"-team", nil)
	tc := tenantClient(t, tenant, "carol")
	bundle := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "ca-bundle"},
		Data: map[string]string{"ca.crt": "PEM"}, BinaryData: map[string][]byte{"ca.der": binary}}
	if err := k8s.Create(ctx, bundle); err != nil {
		t.Fatal(err)
	}
	offer(t, bundle, "*")
	createRequest(t, tc, makeRequest(tenant, "trust", v1alpha1.CopyRequestSource{Kind: v1alpha1.CopyKindConfigMap, Namespace: platform, Name: "ca-bundle"}, "trust-bundle"))
	waitRequest(t, tenant, "trust", metav1.ConditionTrue, "Copied")
	cm := getConfigMap(t, tenant, "trust-bundle")
	if cm == nil || cm.Data["ca.crt"] != "PEM" || string(cm.BinaryData["ca.der"]) != string(binary) || cm.Labels[keys.LabelCopyRequest] != "trust" {
		t.Fatalf("copy %+v", cm)
	}
	if _, ok := cm.Annotations[keys.AnnotationBinaryKeys]; ok {
		t.Error("the envelope-only annotation reached the ConfigMap")
	}
	t.Log("a Secret of the same name is not what a ConfigMap request asks for")
	if s := getSecret(t, tenant, "trust-bundle"); s != nil {
		t.Errorf("a Secret copy appeared: %v", s.Labels)
	}
	if err := tc.Delete(ctx, &v1alpha1.CopyRequest{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "trust"}}); err != nil {
		t.Fatal(err)
	}
	noConfigMap(t, tenant, "trust-bundle")
}

// requestReconciles is controller-runtime's count of finished reconciles of the CopyRequest
// controller.
func requestReconciles(t *testing.T) float64 {
	t.Helper()
	return sumMetric(t, crmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": RequestControllerName})
}

// requestsSettle waits until at least n more CopyRequest reconciles than before have finished,
// and then until the CopyRequest controller has had no queued or running work for a few polls.
func requestsSettle(t *testing.T, before, n float64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%v more CopyRequest reconciles", n), func() error {
		if got := requestReconciles(t) - before; got < n {
			return fmt.Errorf("%v so far", got)
		}
		return nil
	})
	still := 0
	eventually(t, "the CopyRequest controller is idle", func() error {
		busy := sumMetric(t, crmetrics.Registry, "workqueue_depth", map[string]string{"name": RequestControllerName}) +
			sumMetric(t, crmetrics.Registry, "controller_runtime_active_workers", map[string]string{"controller": RequestControllerName})
		if busy > 0 {
			still = 0
			return errors.New("work queued or running")
		}
		if still++; still < 5 {
			return errors.New("idle, checking again")
		}
		return nil
	})
}

// Work amplification (docs/security.md): every event on an offered source wakes every
// CopyRequest naming it, and each used to read the whole source from the API (30 requests of a
// 200 KiB ConfigMap, 3 annotation touches: 93 GETs). The reads are shared: one per
// resourceVersion of the source, however many requests name it.
func TestOneReadOfAnOfferedSourcePerResourceVersionServesEveryCopyRequest(t *testing.T) {
	const c = "sharedread"
	const requests = 30
	platform := namespace(t, c+"-platform", nil)
	tenant := namespace(t, c+"-team", nil)
	src := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "bundle",
			Labels:      map[string]string{keys.LabelOffer: "true"},
			Annotations: map[string]string{keys.AnnotationOfferNamespaces: tenant}},
		Data: map[string]string{"ca.crt": strings.Repeat("x", 200<<10)},
	}
	if err := k8s.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(src)
	before := apiGets.count(&corev1.ConfigMap{}, key)
	reconciled := requestReconciles(t)
	for i := range requests {
		createRequest(t, k8s, makeRequest(tenant, fmt.Sprintf("r%02d", i),
			v1alpha1.CopyRequestSource{Kind: v1alpha1.CopyKindConfigMap, Namespace: platform, Name: src.Name}, fmt.Sprintf("bundle-%02d", i)))
	}
	for i := range requests {
		waitRequest(t, tenant, fmt.Sprintf("r%02d", i), metav1.ConditionTrue, copyplan.ReasonCopied)
	}
	requestsSettle(t, reconciled, requests)
	t.Logf("30 CopyRequests created: %d GETs of the source", apiGets.count(&corev1.ConfigMap{}, key)-before)

	for i := range 3 {
		reconciled = requestReconciles(t)
		updateConfigMap(t, platform, src.Name, func(cm *corev1.ConfigMap) {
			cm.Annotations["example.com/touched"] = fmt.Sprint(i)
		})
		requestsSettle(t, reconciled, requests)
	}
	got := apiGets.count(&corev1.ConfigMap{}, key) - before
	t.Logf("30 CopyRequests created, the source touched 3 times: %d GETs of the source", got)
	if got > 4 {
		t.Errorf("%d GETs of the source for 4 resourceVersions, want at most 4 (one per resourceVersion)", got)
	}
}
