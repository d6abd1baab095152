package secretsync

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// tenantManager is the field manager of a tenant's writes in these tests (kubectl edit's).
const tenantManager = "kubectl-edit"

// patchAs merge-patches obj, as read, to what change makes of it, under field manager.
func patchAs(t *testing.T, manager string, obj client.Object, change func()) {
	t.Helper()
	before := obj.DeepCopyObject().(client.Object)
	change()
	if err := k8s.Patch(ctx, obj, client.MergeFrom(before), client.FieldOwner(manager)); err != nil {
		t.Fatalf("patching %s/%s as %s: %v", obj.GetNamespace(), obj.GetName(), manager, err)
	}
}

// managers lists the copy's managedFields entries as "manager/operation".
func managers(obj client.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	slices.Sort(out)
	return out
}

// copyEvents lists the Events about the copy ns/name with reason.
func copyEvents(t *testing.T, ns, name, reason string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func TestCopiesAreAppliedByTheirFieldManagerAndKeepOthersFields(t *testing.T) {
	const c = "ssa"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"user": []byte("u1"), "pass": []byte("p1")})))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)

	t.Log("a tenant labels and annotates the copy")
	cp := getSecret(t, a, "creds")
	patchAs(t, "kubectl-label", cp, func() {
		cp.Labels["team"] = "blue"
		cp.Annotations["tenant.example/note"] = "mine"
	})

	t.Log("the source changes, and drops a key")
	source = getSecret(t, src, "creds")
	source.Data = map[string][]byte{"user": []byte("u2")}
	if err := k8s.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Secret
	eventually(t, "the copy follows the source and keeps the tenant's metadata", func() error {
		got = getSecret(t, a, "creds")
		if err := isCopy(got, source, c, v1alpha1.DeletionPolicyDelete); err != nil {
			return err
		}
		if got.Labels["team"] != "blue" || got.Annotations["tenant.example/note"] != "mine" {
			return fmt.Errorf("the tenant's metadata is gone: labels %v annotations %v", got.Labels, got.Annotations)
		}
		return nil
	})
	// The copy's fields are the manager's by apply: created by a create, then applied (the
	// create's fields moved to the apply's manager when the dropped key had to go).
	ms := managers(got)
	if !slices.Contains(ms, propagation.FieldManager+"/Apply") || !slices.Contains(ms, "kubectl-label/Update") {
		t.Errorf("managedFields %v: want %s/Apply and the tenant's kubectl-label/Update", ms, propagation.FieldManager)
	}
	if slices.Contains(ms, propagation.FieldManager+"/Update") {
		t.Errorf("managedFields %v: the create's fields were not moved to the apply's manager", ms)
	}

	t.Log("a second change is one apply")
	before := writeRequestsBy(t)
	source = getSecret(t, src, "creds")
	source.Data = map[string][]byte{"user": []byte("u3")}
	if err := k8s.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	idle(t)
	// The test's own update of the source is the PUT.
	var secretWrites []string
	for _, w := range strings.Split(diffRequests(before, writeRequestsBy(t)), ", ") {
		if strings.Contains(w, " secrets/") {
			secretWrites = append(secretWrites, w)
		}
	}
	if !slices.Equal(secretWrites, []string{"APPLY secrets/ +1", "PUT secrets/ +1"}) {
		t.Errorf("writes of Secrets for the change: %v; want the source's PUT and one APPLY of the copy", secretWrites)
	}
}

// A copy written before the manager applied (a create and merge patches under the manager's
// user agent, propagation.LegacyFieldManager) loses a key its source drops: the old manager's
// fields are moved to the apply's (csaupgrade), then the apply removes it.
func TestAKeyDroppedFromTheSourceLeavesACopyWrittenBeforeApply(t *testing.T) {
	const c = "ssalegacy"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"user": []byte("u1"), "old": []byte("o1")})))
	legacy := propagation.Desired(source, a, c)
	legacy.Annotations[keys.AnnotationDeletionPolicy] = propagation.PolicyDelete
	proofs.Prove(legacy, propagation.SecretSyncOwner(c))
	if err := k8s.Create(ctx, legacy, client.FieldOwner(propagation.LegacyFieldManager)); err != nil {
		t.Fatal(err)
	}
	ss := createSync(t, makeSync(c, src, c, sourceName("creds")))
	waitReady(t, ss.Name, 1)
	if got := getSecret(t, a, "creds"); got.ResourceVersion != legacy.ResourceVersion {
		t.Errorf("the older copy in step was written (managedFields %v)", managers(got))
	}

	source = getSecret(t, src, "creds")
	delete(source.Data, "old")
	if err := k8s.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the dropped key leaves the older copy", func() error {
		got := getSecret(t, a, "creds")
		if _, ok := got.Data["old"]; ok {
			return fmt.Errorf("data keys %v, managedFields %v", dataKeys(got.Data), managers(got))
		}
		return isCopy(got, source, c, v1alpha1.DeletionPolicyDelete)
	})
	if ms := managers(getSecret(t, a, "creds")); !slices.Equal(ms, []string{propagation.FieldManager + "/Apply"}) {
		t.Errorf("managedFields %v, want only %s/Apply (the old manager's fields upgraded)", ms, propagation.FieldManager)
	}
}

// A tenant's edit of a proven copy's data, and a key it adds, are taken back (force on a proven
// copy) and said in an Event on the copy naming its field manager.
func TestATenantsEditOfAProvenCopyIsTakenBackAndSaid(t *testing.T) {
	const c = "ssaedit"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	cp := copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)

	patchAs(t, tenantManager, cp, func() {
		cp.Data["token"] = []byte("tenant's")
		cp.Data["extra"] = []byte("added")
	})
	eventually(t, "the copy is the source's again", func() error {
		got := getSecret(t, a, "creds")
		if _, ok := got.Data["extra"]; ok {
			return fmt.Errorf("data keys %v", dataKeys(got.Data))
		}
		return isCopy(got, source, c, v1alpha1.DeletionPolicyDelete)
	})
	eventually(t, "a FieldsTakenBack Event on the copy names the tenant's field manager", func() error {
		evs := copyEvents(t, a, "creds", copyplan.ReasonFieldsTakenBack)
		if len(evs) == 0 {
			return errors.New("none yet")
		}
		if e := evs[0]; e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, tenantManager) {
			return fmt.Errorf("event %s %q", e.Type, e.Note)
		}
		return nil
	})
}

// An object with our label and the source's data but no valid proof is adopted only where no
// other field manager holds a field the apply sets: a field another manager holds (here a
// deletion-policy annotation of ours with another value) makes it a Conflict, never a takeover.
func TestAnUnprovenCopyWhoseFieldsAnotherManagerHoldsIsNotTaken(t *testing.T) {
	const c = "ssaunproven"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	createSecret(t, makeSecret(src, "creds"))
	theirs := makeSecret(a, "creds", withLabels(map[string]string{keys.LabelSecretSync: c}))
	theirs.Annotations = map[string]string{keys.AnnotationDeletionPolicy: "Orphan"}
	if err := k8s.Create(ctx, theirs, client.FieldOwner(tenantManager)); err != nil {
		t.Fatal(err)
	}
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	// After createSync's clean-up is registered, so before it runs: it waits for every object
	// with the label to go, and this one stays when its SecretSync goes.
	t.Cleanup(func() { _ = k8s.Delete(ctx, theirs) })

	waitReason(t, c, copyplan.ReasonConflict)
	idle(t)
	got := getSecret(t, a, "creds")
	if got.ResourceVersion != theirs.ResourceVersion {
		t.Errorf("the unproven object was written: annotations %v, managedFields %v", got.Annotations, managers(got))
	}
	if _, ok := got.Annotations[keys.AnnotationOwnership]; ok {
		t.Errorf("the unproven object was given a proof")
	}
}

// ServiceAccount.imagePullSecrets is an atomic list (+listType=atomic in k8s.io/api): an apply
// of only our entry would own, and set, the whole list, dropping the entries others added. So the
// entries are written by a merge patch of the whole list on the version read (patchPullSecrets),
// under the named field manager; this test holds the premise, so that the choice is revisited if
// the API ever makes the list a map.
func TestServiceAccountPullSecretsAreAnAtomicListSoTheyAreNotApplied(t *testing.T) {
	ns := namespace(t, "ssa-atomic", nil)
	serviceAccount(t, ns, "builder", "theirs")
	sa := corev1ac.ServiceAccount("builder", ns).WithImagePullSecrets(corev1ac.LocalObjectReference().WithName("ours"))
	if err := k8s.Apply(ctx, sa, client.FieldOwner(propagation.FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range sa.ImagePullSecrets {
		names = append(names, *r.Name)
	}
	if !slices.Equal(names, []string{"ours"}) {
		t.Fatalf("an apply of only our entry gives %v: the list is no longer atomic, and the entries could be applied", names)
	}
}

func TestServiceAccountEntriesCarryTheFieldManagerAndGoWhenNoLongerNamed(t *testing.T) {
	const c = "ssapull"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	source := createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	serviceAccount(t, a, "builder", "theirs")
	serviceAccount(t, a, "deployer")
	createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor("builder", "deployer")))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	sa := pullSecretsAre(t, a, "builder", []string{"theirs", "regcred"}, "regcred")
	pullSecretsAre(t, a, "deployer", []string{"regcred"}, "regcred")
	if ms := managers(sa); !slices.Contains(ms, propagation.FieldManager+"/Update") {
		t.Errorf("managedFields %v: the entry's write does not name %s", ms, propagation.FieldManager)
	}

	t.Log("someone else adds an entry; the SecretSync stops naming builder")
	patchAs(t, tenantManager, sa, func() {
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: "theirs-too"})
	})
	eventually(t, "dropping builder from imagePullSecretFor", func() error {
		ss := getSync(t, c)
		ss.Spec.ImagePullSecretFor = []string{"deployer"}
		return k8s.Update(ctx, ss)
	})
	pullSecretsAre(t, a, "builder", []string{"theirs", "theirs-too"}, "")
	pullSecretsAre(t, a, "deployer", []string{"regcred"}, "regcred")
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: a, Name: "regcred"}, &corev1.Secret{}); apierrors.IsNotFound(err) {
		t.Errorf("the copy went with the entry")
	}
}
