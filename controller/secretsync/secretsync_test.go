package secretsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

// binary is data that is not UTF-8 (a NUL, lone continuation and lead bytes, an invalid
// two-byte sequence): copies must carry it byte for byte.
var binary = []byte{0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x0a, 0xe2, 0x82}

const dockerConfig = `{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}`

func TestASourceIsCopiedIntoEveryTargetNamespaceAndNowhereElse(t *testing.T) {
	const c = "copy"
	// The source namespace carries the case label: only the rule "never the source namespace"
	// keeps a copy out of it.
	src := namespace(t, c+"-src", map[string]string{caseLabel: c})
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	other := namespace(t, c+"-other", nil)
	// The default exclusions are selected too, so only the exclusion keeps copies out of them.
	excluded := []string{"kube-system", "kube-public", "kube-node-lease"}
	for _, ns := range excluded {
		setNamespaceLabel(t, ns, caseLabel, c)
		t.Cleanup(func() { setNamespaceLabel(t, ns, caseLabel, "") })
	}
	source := createSecret(t, makeSecret(src, "creds", withType("example.com/custom"),
		withData(map[string][]byte{"bin": binary, "text": []byte("hello")}),
		withLabels(map[string]string{"team.example.com/owner": "payments"})))

	createSync(t, makeSync(c, src, c, sourceName("creds")))
	for _, ns := range []string{a, b} {
		got := copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
		if _, ok := got.Labels["team.example.com/owner"]; ok {
			t.Errorf("copy in %s carries the source's own label: %v", ns, got.Labels)
		}
	}
	late := targetNamespace(t, c+"-late", c)
	copyIn(t, late, source, c, v1alpha1.DeletionPolicyDelete)

	ss := waitReady(t, c, 3)
	st := ss.Status
	if st.Sources != 1 || st.Targets != 3 || st.Conflicts != 0 || st.Failed != 0 || st.SyncedRatio != "3/3" || len(st.Failures) != 0 {
		t.Errorf("status = %+v, want 1 source, 3 targets, 3/3 synced, no conflicts or failures", st)
	}
	if st.LastSyncTime == nil || time.Since(st.LastSyncTime.Time) > time.Minute {
		t.Errorf("status.lastSyncTime = %v, want the time of the last copy write", st.LastSyncTime)
	}
	for _, ns := range append([]string{other}, excluded...) {
		if s := getSecret(t, ns, "creds"); s != nil {
			t.Errorf("namespace %s got a copy: %v", ns, s.Labels)
		}
	}
	if s := getSecret(t, src, "creds"); s.ResourceVersion != source.ResourceVersion || s.Labels[keys.LabelSecretSync] != "" {
		t.Errorf("the source was written: resourceVersion %s -> %s, labels %v", source.ResourceVersion, s.ResourceVersion, s.Labels)
	}
}

func TestNamespaceGlobsIncludeAndExclude(t *testing.T) {
	const c = "globs"
	src := namespace(t, c+"-src", nil)
	in1, in2 := targetNamespace(t, c+"-team-a", c), targetNamespace(t, c+"-team-b", c)
	sys := targetNamespace(t, c+"-team-system", c) // included by name, excluded by the suffix glob
	other := targetNamespace(t, c+"-infra", c)     // selected by label, not included by name
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c, src, c, sourceName("creds"), func(ss *v1alpha1.SecretSync) {
		ss.Spec.Target.IncludeNamespaces = []string{c + "-team-*"}
		ss.Spec.Target.ExcludeNamespaces = []string{"*-system"}
	}))
	for _, ns := range []string{in1, in2} {
		copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete)
	}
	waitReady(t, c, 2)
	for _, ns := range []string{sys, other} {
		if s := getSecret(t, ns, "creds"); s != nil {
			t.Errorf("namespace %s got a copy despite the patterns", ns)
		}
	}
}

func TestARenamedCopyTakesTheTargetName(t *testing.T) {
	const c = "rename"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	serviceAccount(t, a, "default")
	createSecret(t, makeSecret(src, "harbor-pull", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	createSync(t, makeSync(c, src, c, sourceName("harbor-pull"), pullSecretFor("default"), func(ss *v1alpha1.SecretSync) {
		ss.Spec.Target.Name = "regcred"
	}))
	eventually(t, "the copy is named regcred", func() error {
		if s := getSecret(t, a, "regcred"); s == nil || string(s.Data[corev1.DockerConfigJsonKey]) != dockerConfig {
			return fmt.Errorf("copy regcred = %v", s)
		}
		return nil
	})
	if s := getSecret(t, a, "harbor-pull"); s != nil {
		t.Errorf("a copy under the source's name exists too")
	}
	pullSecretsAre(t, a, "default", []string{"regcred"}, "regcred")

	// Renamed again: the copy of the old name is no longer wanted and goes (deletionPolicy Delete).
	eventually(t, "renaming the copy", func() error {
		ss := getSync(t, c)
		ss.Spec.Target.Name = "harbor"
		return k8s.Update(ctx, ss)
	})
	eventually(t, "regcred is replaced by harbor", func() error {
		if getSecret(t, a, "harbor") == nil || getSecret(t, a, "regcred") != nil {
			return fmt.Errorf("harbor %v, regcred %v", getSecret(t, a, "harbor") != nil, getSecret(t, a, "regcred") != nil)
		}
		return nil
	})
	pullSecretsAre(t, a, "default", []string{"harbor"}, "harbor")
}

func TestCopiesCarryTheLabelsAndAnnotationsTheSpecAsksFor(t *testing.T) {
	const c = "metadata"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	createSecret(t, makeSecret(src, "creds", withLabels(map[string]string{"app.kubernetes.io/name": "harbor", "team": "platform"})))
	createSync(t, makeSync(c, src, c, sourceName("creds"), func(ss *v1alpha1.SecretSync) {
		ss.Spec.Target.Labels = map[string]string{"argocd.argoproj.io/instance": "tenants", "extra": "1"}
		ss.Spec.Target.Annotations = map[string]string{"reloader.stakater.com/match": "true"}
		ss.Spec.Target.SourceLabels = []string{"app.kubernetes.io/*"}
	}))
	eventually(t, "the copy carries the asked-for metadata", func() error {
		s := getSecret(t, a, "creds")
		if s == nil || s.Labels["argocd.argoproj.io/instance"] != "tenants" || s.Labels["extra"] != "1" ||
			s.Labels["app.kubernetes.io/name"] != "harbor" || s.Annotations["reloader.stakater.com/match"] != "true" {
			return fmt.Errorf("copy metadata: %v", s)
		}
		if _, ok := s.Labels["team"]; ok {
			return fmt.Errorf("the source label team travelled though sourceLabels does not pick it: %v", s.Labels)
		}
		return nil
	})
	// Someone else labels the copy; then the spec drops a label: it goes, theirs stays.
	eventually(t, "labelling the copy", func() error {
		s := getSecret(t, a, "creds")
		s.Labels["someone-else"] = "keep"
		return k8s.Update(ctx, s)
	})
	eventually(t, "dropping a label from the spec", func() error {
		ss := getSync(t, c)
		delete(ss.Spec.Target.Labels, "extra")
		return k8s.Update(ctx, ss)
	})
	eventually(t, "the dropped label leaves the copy", func() error {
		s := getSecret(t, a, "creds")
		if _, ok := s.Labels["extra"]; ok || s.Labels["someone-else"] != "keep" || s.Labels["argocd.argoproj.io/instance"] != "tenants" {
			return fmt.Errorf("copy labels %v", s.Labels)
		}
		return nil
	})
}

func TestKeySelectionAndRenamedKeys(t *testing.T) {
	const c = "keys"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	createSecret(t, makeSecret(src, "certs", withData(map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key"), "ca.crt": []byte("ca")})))
	createSync(t, makeSync(c, src, c, sourceName("certs"), func(ss *v1alpha1.SecretSync) {
		ss.Spec.Keys = &v1alpha1.SecretSyncKeys{Exclude: []string{"tls.key"}, Rename: []v1alpha1.KeyRename{{From: "ca.crt", To: "ca-bundle.crt"}}}
	}))
	waitReady(t, c, 1)
	eventually(t, "the copy holds the selected keys", func() error {
		s := getSecret(t, a, "certs")
		if s == nil || len(s.Data) != 2 || string(s.Data["tls.crt"]) != "crt" || string(s.Data["ca-bundle.crt"]) != "ca" {
			return fmt.Errorf("copy data %v", s)
		}
		return nil
	})
	// A key the source does not have: reported, the rest still copied.
	eventually(t, "naming a key the source lacks", func() error {
		ss := getSync(t, c)
		ss.Spec.Keys = &v1alpha1.SecretSyncKeys{Include: []string{"ca.crt", "missing.pem"}}
		return k8s.Update(ctx, ss)
	})
	ss := waitReason(t, c, "KeysNotFound")
	if cond := meta.FindStatusCondition(ss.Status.Conditions, copyplan.ConditionReady); !strings.Contains(cond.Message, c+"-src/certs has no missing.pem") {
		t.Errorf("Ready message %q does not name the source and the key", cond.Message)
	}
	eventually(t, "the copy holds only ca.crt", func() error {
		if s := getSecret(t, a, "certs"); s == nil || len(s.Data) != 1 || string(s.Data["ca.crt"]) != "ca" {
			return fmt.Errorf("copy data %v", s)
		}
		return nil
	})
}

func TestANamespaceThatStopsMatchingLosesItsCopyPerPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      string
		policy v1alpha1.DeletionPolicy
	}{
		{"with Delete the copy is deleted", "nsdel", v1alpha1.DeletionPolicyDelete},
		{"with Orphan the copy is released and keeps its data", "nsorph", v1alpha1.DeletionPolicyOrphan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			src := namespace(t, c+"-src", nil)
			a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
			source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"bin": binary})))
			createSync(t, makeSync(c, src, c, sourceName("creds"), policy(tc.policy)))
			kept := copyIn(t, a, source, c, tc.policy)
			copyIn(t, b, source, c, tc.policy)
			waitReady(t, c, 2)

			setNamespaceLabel(t, b, caseLabel, "")
			if tc.policy == v1alpha1.DeletionPolicyDelete {
				noSecret(t, b, "creds")
			} else {
				releasedIn(t, b, source)
			}
			if ss := waitReady(t, c, 1); ss.Status.Targets != 1 {
				t.Errorf("status.targets = %d, want 1", ss.Status.Targets)
			}
			if s := getSecret(t, a, "creds"); s == nil || s.ResourceVersion != kept.ResourceVersion {
				t.Errorf("the copy in the namespace that still matches was rewritten or removed: %v", s)
			}
		})
	}
}

// releasedIn waits until ns holds src's data under src's name with none of our keys.
func releasedIn(t *testing.T, ns string, src *corev1.Secret) *corev1.Secret {
	t.Helper()
	var s *corev1.Secret
	eventually(t, fmt.Sprintf("the copy in %s is released", ns), func() error {
		s = getSecret(t, ns, src.Name)
		if s == nil {
			return errors.New("deleted, want released")
		}
		for _, k := range []string{keys.LabelSecretSync, keys.LabelManagedBy} {
			if _, ok := s.Labels[k]; ok {
				return fmt.Errorf("still labelled %s", k)
			}
		}
		for _, k := range []string{keys.AnnotationSource, keys.AnnotationDeletionPolicy} {
			if _, ok := s.Annotations[k]; ok {
				return fmt.Errorf("still annotated %s", k)
			}
		}
		if s.Type != src.Type {
			return fmt.Errorf("type %q, want %q", s.Type, src.Type)
		}
		return sameData(s.Data, src.Data)
	})
	return s
}

// orphanedIn waits until namespace ns holds src's copy made by ss, kept after its source went
// away: still ours, marked keys.AnnotationOrphaned.
func orphanedIn(t *testing.T, ns string, src *corev1.Secret, ss string) *corev1.Secret {
	t.Helper()
	var s *corev1.Secret
	eventually(t, fmt.Sprintf("the copy in %s is kept and marked orphaned", ns), func() error {
		s = getSecret(t, ns, src.Name)
		if err := isCopy(s, src, ss, v1alpha1.DeletionPolicyOrphan); err != nil {
			return err
		}
		if s.Annotations[keys.AnnotationOrphaned] == "" {
			return errors.New("not marked orphaned")
		}
		return nil
	})
	return s
}

func TestASourceUpdateReachesEveryCopy(t *testing.T) {
	const c = "update"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"token": []byte("v1"), "bin": binary})))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete)
	waitReady(t, c, 2)

	// A changed value, a new key and a removed key.
	source.Data = map[string][]byte{"token": []byte("v2"), "ca.crt": append([]byte("-----"), binary...)}
	if err := k8s.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete)
	waitReady(t, c, 2)
}

func TestADeletedSourceTakesItsCopiesAlongPerPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      string
		policy v1alpha1.DeletionPolicy
	}{
		{"with Delete the copies are deleted", "srcdel", v1alpha1.DeletionPolicyDelete},
		{"with Orphan the copies are kept (still ours, marked orphaned) for the source's return", "srcorph", v1alpha1.DeletionPolicyOrphan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			src := namespace(t, c+"-src", nil)
			a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
			source := createSecret(t, makeSecret(src, "creds"))
			createSync(t, makeSync(c, src, c, sourceName("creds"), policy(tc.policy)))
			copyIn(t, a, source, c, tc.policy)
			copyIn(t, b, source, c, tc.policy)
			waitReady(t, c, 2)

			if err := k8s.Delete(ctx, source); err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{a, b} {
				if tc.policy == v1alpha1.DeletionPolicyDelete {
					noSecret(t, ns, "creds")
				} else {
					orphanedIn(t, ns, source, c)
				}
			}
			ss := waitReason(t, c, "SourceNotFound")
			if ss.Status.Sources != 0 || ss.Status.Desired != 0 {
				t.Errorf("status = %+v, want no sources and nothing desired", ss.Status)
			}
			eventually(t, "a SourceNotFound Warning Event", func() error {
				if len(warningEvents(t, c, "SourceNotFound")) == 0 {
					return errors.New("none yet")
				}
				return nil
			})
		})
	}
}

func TestADeletedSecretSyncTakesItsCopiesAlongPerPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      string
		policy v1alpha1.DeletionPolicy
	}{
		{"with Delete the copies are deleted", "ssdel", v1alpha1.DeletionPolicyDelete},
		{"with Orphan the copies are released", "ssorph", v1alpha1.DeletionPolicyOrphan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			src := namespace(t, c+"-src", nil)
			a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
			source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"bin": binary})))
			ss := createSync(t, makeSync(c, src, c, sourceName("creds"), policy(tc.policy)))
			copyIn(t, a, source, c, tc.policy)
			copyIn(t, b, source, c, tc.policy)
			waitReady(t, c, 2)

			// No finalizer: the SecretSync is gone at once, and the controller cleans up after.
			if err := k8s.Delete(ctx, ss); err != nil {
				t.Fatal(err)
			}
			if err := k8s.Get(ctx, types.NamespacedName{Name: c}, &v1alpha1.SecretSync{}); !apierrors.IsNotFound(err) {
				t.Errorf("SecretSync after delete: %v, want NotFound (no finalizer)", err)
			}
			for _, ns := range []string{a, b} {
				if tc.policy == v1alpha1.DeletionPolicyDelete {
					noSecret(t, ns, "creds")
				} else {
					releasedIn(t, ns, source)
				}
			}
			if s := getSecret(t, src, "creds"); s == nil {
				t.Error("the source was deleted with the SecretSync")
			}
		})
	}
}

// replaceSecret deletes the Secret (if any) and creates want in its place, retrying when the
// controller recreates its copy in between.
func replaceSecret(t *testing.T, want *corev1.Secret) types.UID {
	t.Helper()
	var uid types.UID
	eventually(t, fmt.Sprintf("replacing %s/%s", want.Namespace, want.Name), func() error {
		if cur := getSecret(t, want.Namespace, want.Name); cur != nil {
			err := k8s.Delete(ctx, cur, client.Preconditions{UID: &cur.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		}
		s := want.DeepCopy()
		if err := k8s.Create(ctx, s); err != nil {
			return err
		}
		uid = s.UID
		return nil
	})
	return uid
}

// updateSecret applies mutate to the live Secret and updates it, retrying on conflicts.
func updateSecret(t *testing.T, ns, name string, mutate func(*corev1.Secret)) *corev1.Secret {
	t.Helper()
	var s *corev1.Secret
	eventually(t, fmt.Sprintf("updating %s/%s", ns, name), func() error {
		s = getSecret(t, ns, name)
		if s == nil {
			return errors.New("not found")
		}
		mutate(s)
		return k8s.Update(ctx, s)
	})
	return s
}

func TestACopyIsRepairedAndOthersMetadataOnItIsKept(t *testing.T) {
	const c = "repair"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"token": []byte("right"), "bin": binary})))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	first := copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete)
	waitReady(t, c, 2)

	t.Log("edited data is restored")
	updateSecret(t, a, "creds", func(s *corev1.Secret) {
		s.Data["token"] = []byte("tampered")
		s.Data["extra"] = []byte("added")
	})
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)

	t.Log("a copy of another type is replaced (the API refuses to change a Secret's type)")
	// As a restore from a backup would bring it back: with the copy's proof.
	impostor := makeSecret(a, "creds", withType("example.com/other"), withData(map[string][]byte{"token": []byte("wrong")}))
	impostor.Labels = map[string]string{keys.LabelSecretSync: c}
	impostor.Annotations = map[string]string{keys.AnnotationSource: src + "/creds", keys.AnnotationDeletionPolicy: "Delete",
		keys.AnnotationOwnership: first.Annotations[keys.AnnotationOwnership]}
	impostorUID := replaceSecret(t, impostor)
	eventually(t, "the copy of the wrong type is replaced", func() error {
		s := getSecret(t, a, "creds")
		if s != nil && s.UID == impostorUID {
			return fmt.Errorf("still the impostor of type %s", s.Type)
		}
		return isCopy(s, source, c, v1alpha1.DeletionPolicyDelete)
	})

	t.Log("a deleted copy is recreated")
	cur := getSecret(t, a, "creds")
	if err := k8s.Delete(ctx, cur); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted copy is recreated", func() error {
		s := getSecret(t, a, "creds")
		if s != nil && s.UID == cur.UID {
			return errors.New("not deleted yet")
		}
		return isCopy(s, source, c, v1alpha1.DeletionPolicyDelete)
	})
	if cur.UID == first.UID {
		t.Error("the copy was never replaced")
	}
	waitReady(t, c, 2)

	t.Log("labels and annotations others add stay, and cause no write")
	quiet(t)
	before := writes(t, c)
	marked := updateSecret(t, a, "creds", func(s *corev1.Secret) {
		s.Labels["team.example.com/owner"] = "payments"
		s.Annotations["reflector.example.com/note"] = "seen"
	})
	// A barrier: tamper with the other copy; once it is repaired, the controller has
	// reconciled after the cache saw the marks above (one informer delivers in order).
	updateSecret(t, b, "creds", func(s *corev1.Secret) { s.Data["token"] = []byte("tampered") })
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete)
	idle(t)
	s := getSecret(t, a, "creds")
	if s.ResourceVersion != marked.ResourceVersion || s.Labels["team.example.com/owner"] != "payments" || s.Annotations["reflector.example.com/note"] != "seen" {
		t.Errorf("the marked copy was rewritten (resourceVersion %s -> %s) or lost the marks: labels %v annotations %v",
			marked.ResourceVersion, s.ResourceVersion, s.Labels, s.Annotations)
	}
	if err := isCopy(s, source, c, v1alpha1.DeletionPolicyDelete); err != nil {
		t.Error(err)
	}
	if got := writes(t, c) - before; got != 1 {
		t.Errorf("%v writes after marking one copy and tampering with another, want 1 (the repair)", got)
	}
}

func TestASecretThatIsNotOursIsNeverTouched(t *testing.T) {
	const c = "foreign"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	theirs := createSecret(t, makeSecret(a, "creds", withData(map[string][]byte{"mine": []byte("keep")}),
		withLabels(map[string]string{"app": "theirs"})))
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete)

	ss := waitReason(t, c, "Conflict")
	st := ss.Status
	if st.Conflicts != 1 || st.Failed != 0 || st.Synced != 1 || st.Desired != 2 || st.SyncedRatio != "1/2" {
		t.Errorf("status = %+v, want 1 conflict, 0 failed, synced 1/2", st)
	}
	if len(st.Failures) != 1 || st.Failures[0].Namespace != a || st.Failures[0].Name != "creds" || st.Failures[0].Reason != "Conflict" ||
		!strings.Contains(st.Failures[0].Message, "not managed") {
		t.Errorf("status.failures = %+v, want the one conflict in %s with reason Conflict", st.Failures, a)
	}
	eventually(t, "a Conflict Warning Event about the SecretSync", func() error {
		evs := warningEvents(t, c, "Conflict")
		if len(evs) == 0 {
			return errors.New("none yet")
		}
		if !strings.Contains(evs[0].Note, a+"/creds") {
			return fmt.Errorf("note %q does not name %s/creds", evs[0].Note, a)
		}
		return nil
	})
	if got := testutil.ToFloat64(testMetrics.Conflicts.WithLabelValues(c)); got != 1 {
		t.Errorf("conflicts gauge = %v, want 1", got)
	}

	// Wake the controller again (an unrelated namespace change enqueues every SecretSync), so
	// the checks below cover reconciles that already know about the conflict.
	before := reconciles(t)
	setNamespaceLabel(t, namespace(t, c+"-unrelated", nil), "touched", "yes")
	settle(t, before)
	ssBefore, writesBefore := getSync(t, c).ResourceVersion, writes(t, c)
	// The conflict is rechecked every conflictRecheck, not in a loop, and a recheck with
	// nothing new writes nothing: a fixed window, since this asserts what does not happen.
	window := conflictRecheck + time.Second
	if n := passesWithin(t, c, window); n > 2 {
		t.Errorf("%v passes within %v of a SecretSync in conflict, want at most 2 (one recheck per %v)", n, window, conflictRecheck)
	}
	if got := writes(t, c) - writesBefore; got != 0 {
		t.Errorf("%v writes while in conflict with nothing new, want 0", got)
	}
	if rv := getSync(t, c).ResourceVersion; rv != ssBefore {
		t.Errorf("the SecretSync was written while in conflict with nothing new (resourceVersion %s -> %s)", ssBefore, rv)
	}
	now := getSecret(t, a, "creds")
	if now.ResourceVersion != theirs.ResourceVersion || now.Labels[keys.LabelSecretSync] != "" {
		t.Errorf("their Secret was written: resourceVersion %s -> %s, labels %v", theirs.ResourceVersion, now.ResourceVersion, now.Labels)
	}
	if err := sameData(now.Data, theirs.Data); err != nil {
		t.Errorf("their Secret's data changed: %v", err)
	}

	t.Log("once their Secret is gone, the copy moves in (as the Conflict message says)")
	if err := k8s.Delete(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	if ss := waitReady(t, c, 2); ss.Status.Conflicts != 0 || len(ss.Status.Failures) != 0 {
		t.Errorf("status = %+v, want no conflicts left", ss.Status)
	}
}

func TestTheFirstSecretSyncKeepsATargetTwoAimAt(t *testing.T) {
	const c = "twice"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c+"-first", src, c, sourceName("creds")))
	copies := []*corev1.Secret{
		copyIn(t, a, source, c+"-first", v1alpha1.DeletionPolicyDelete),
		copyIn(t, b, source, c+"-first", v1alpha1.DeletionPolicyDelete),
	}
	waitReady(t, c+"-first", 2)

	createSync(t, makeSync(c+"-second", src, c, sourceName("creds")))
	ss := waitReason(t, c+"-second", "Conflict")
	if ss.Status.Conflicts != 2 || len(ss.Status.Failures) != 2 {
		t.Errorf("second's status = %+v, want both targets in conflict", ss.Status)
	}
	for _, f := range ss.Status.Failures {
		if f.Reason != "Conflict" || !strings.Contains(f.Message, c+"-first") {
			t.Errorf("failure %+v, want reason Conflict naming %s-first", f, c)
		}
	}
	eventually(t, "a Conflict Warning Event about the second SecretSync", func() error {
		if len(warningEvents(t, c+"-second", "Conflict")) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	waitReady(t, c+"-first", 2)
	for _, cp := range copies {
		if s := getSecret(t, cp.Namespace, cp.Name); s.ResourceVersion != cp.ResourceVersion || s.Labels[keys.LabelSecretSync] != c+"-first" {
			t.Errorf("copy %s/%s changed hands or was rewritten: labels %v", cp.Namespace, cp.Name, s.Labels)
		}
	}

	t.Log("once the first is deleted (and its copies with it), the second takes the targets")
	if err := k8s.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: c + "-first"}}); err != nil {
		t.Fatal(err)
	}
	copyIn(t, a, source, c+"-second", v1alpha1.DeletionPolicyDelete)
	copyIn(t, b, source, c+"-second", v1alpha1.DeletionPolicyDelete)
	if ss := waitReady(t, c+"-second", 2); ss.Status.Conflicts != 0 {
		t.Errorf("second's status = %+v, want no conflicts left", ss.Status)
	}
}

func TestAnImmutableSourceGivesImmutableCopiesThatAreReplacedWhenItChanges(t *testing.T) {
	const c = "immut"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	selected := map[string]string{"sync": "yes"}
	source := createSecret(t, makeSecret(src, "tls", immutable(), withLabels(selected), withData(map[string][]byte{"tls.key": binary, "v": []byte("1")})))
	createSync(t, makeSync(c, src, c, sourceSelector(selected)))
	old := map[string]types.UID{}
	for _, ns := range []string{a, b} {
		old[ns] = copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete).UID
	}
	waitReady(t, c, 2)

	// An immutable Secret changes by delete and create.
	if err := k8s.Delete(ctx, source); err != nil {
		t.Fatal(err)
	}
	source = createSecret(t, makeSecret(src, "tls", immutable(), withLabels(selected), withData(map[string][]byte{"tls.key": binary, "v": []byte("2")})))
	for _, ns := range []string{a, b} {
		if s := copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete); s.UID == old[ns] {
			t.Errorf("the immutable copy in %s changed without being replaced", ns)
		}
	}
	waitReady(t, c, 2)

	t.Log("an immutable copy with stale data (as a crash could leave it) is replaced")
	stale := makeSecret(a, "tls", immutable(), withData(map[string][]byte{"tls.key": binary, "v": []byte("1")}))
	stale.Labels = map[string]string{keys.LabelSecretSync: c}
	stale.Annotations = map[string]string{keys.AnnotationOwnership: proofs.Sign("Secret", a, "tls", keys.LabelSecretSync, c)}
	staleUID := replaceSecret(t, stale)
	eventually(t, "the stale immutable copy is replaced", func() error {
		s := getSecret(t, a, "tls")
		if s != nil && s.UID == staleUID {
			return errors.New("still the stale copy")
		}
		return isCopy(s, source, c, v1alpha1.DeletionPolicyDelete)
	})
	waitReady(t, c, 2)
}

// serviceAccount creates a ServiceAccount with the given imagePullSecrets.
func serviceAccount(t *testing.T, ns, name string, pullSecrets ...string) *corev1.ServiceAccount {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, n := range pullSecrets {
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
	}
	if err := k8s.Create(ctx, sa); err != nil {
		t.Fatalf("creating ServiceAccount %s/%s: %v", ns, name, err)
	}
	return sa
}

func getServiceAccount(t *testing.T, ns, name string) *corev1.ServiceAccount {
	t.Helper()
	sa := &corev1.ServiceAccount{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sa); err != nil {
		t.Fatalf("reading ServiceAccount %s/%s: %v", ns, name, err)
	}
	return sa
}

func pullSecretNames(sa *corev1.ServiceAccount) []string {
	out := []string{}
	for _, r := range sa.ImagePullSecrets {
		out = append(out, r.Name)
	}
	return out
}

// pullSecretsAre waits until the ServiceAccount lists exactly names, in order, and our
// annotation is ours (absent when empty).
func pullSecretsAre(t *testing.T, ns, name string, names []string, ours string) *corev1.ServiceAccount {
	t.Helper()
	var sa *corev1.ServiceAccount
	eventually(t, fmt.Sprintf("ServiceAccount %s/%s lists %v", ns, name, names), func() error {
		sa = getServiceAccount(t, ns, name)
		if got := pullSecretNames(sa); !slices.Equal(got, names) {
			return fmt.Errorf("imagePullSecrets %v", got)
		}
		got, ok := sa.Annotations[keys.AnnotationPullSecrets]
		if got != ours || (ours == "" && ok) {
			return fmt.Errorf("annotation %s=%q (present %v), want %q", keys.AnnotationPullSecrets, got, ok, ours)
		}
		return nil
	})
	return sa
}

func TestImagePullSecretForListsTheCopyOnTheNamedServiceAccounts(t *testing.T) {
	const c = "pull"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	serviceAccount(t, a, "builder", "theirs")
	bystander := serviceAccount(t, a, "default", "theirs")

	ss := createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor("builder")))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete)
	pullSecretsAre(t, a, "builder", []string{"theirs", "regcred"}, "regcred")
	waitReady(t, c, 2)

	t.Log("a ServiceAccount created after the copy gets it too")
	serviceAccount(t, b, "builder")
	pullSecretsAre(t, b, "builder", []string{"regcred"}, "regcred")

	t.Log("an entry added by someone else after ours stays")
	eventually(t, "adding an entry of theirs", func() error {
		sa := getServiceAccount(t, a, "builder")
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: "theirs-too"})
		return k8s.Update(ctx, sa)
	})
	if sa := getServiceAccount(t, a, "default"); sa.ResourceVersion != bystander.ResourceVersion {
		t.Errorf("a ServiceAccount not named in imagePullSecretFor was written: %v", pullSecretNames(sa))
	}

	t.Log("deleting the SecretSync removes our entries and only ours")
	if err := k8s.Delete(ctx, ss); err != nil {
		t.Fatal(err)
	}
	pullSecretsAre(t, a, "builder", []string{"theirs", "theirs-too"}, "")
	pullSecretsAre(t, b, "builder", []string{}, "")
	noSecret(t, a, "regcred")
	noSecret(t, b, "regcred")
}

// churnServiceAccounts keeps patching a label on the ServiceAccounts until stop is called, so
// the manager's cache is often a step behind them and the controller's optimistic-lock patches
// meet conflicts.
func churnServiceAccounts(t *testing.T, sas ...types.NamespacedName) (stop func()) {
	t.Helper()
	churn, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; churn.Err() == nil; i++ {
			for _, sa := range sas {
				patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"churn":"%d"}}}`, i)))
				_ = k8s.Patch(churn, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: sa.Namespace, Name: sa.Name}}, patch)
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// whileChurning keeps the ServiceAccounts changing until gone reports true or 3 s have passed.
func whileChurning(t *testing.T, sas []types.NamespacedName, gone func() bool) {
	t.Helper()
	stop := churnServiceAccounts(t, sas...)
	// Not gone after 3 s is for the caller to find: the churn stops either way.
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
		return gone(), nil
	})
	stop()
}

func TestImagePullSecretEntriesGoWithTheirCopiesWhileServiceAccountsKeepChanging(t *testing.T) {
	const c = "pullchurn"
	src := namespace(t, c+"-src", nil)
	var nss []string
	var sas []types.NamespacedName
	for i := range 4 {
		ns := targetNamespace(t, fmt.Sprintf("%s-%d", c, i), c)
		nss = append(nss, ns)
		serviceAccount(t, ns, "builder")
		sas = append(sas, types.NamespacedName{Namespace: ns, Name: "builder"})
	}
	createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	ss := createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor("builder")))
	for _, ns := range nss {
		pullSecretsAre(t, ns, "builder", []string{"regcred"}, "regcred")
	}
	copiesLeft := func(nss ...string) bool {
		for _, ns := range nss {
			if getSecret(t, ns, "regcred") != nil {
				return false
			}
		}
		return true
	}

	t.Log("a namespace that stops matching loses the entry with the copy")
	setNamespaceLabel(t, nss[0], caseLabel, "")
	whileChurning(t, sas, func() bool { return copiesLeft(nss[0]) })
	noSecret(t, nss[0], "regcred")
	pullSecretsAre(t, nss[0], "builder", []string{}, "")

	t.Log("a deleted SecretSync takes every entry with its copies")
	if err := k8s.Delete(ctx, ss); err != nil {
		t.Fatal(err)
	}
	whileChurning(t, sas, func() bool { return copiesLeft(nss[1:]...) })
	for _, ns := range nss[1:] {
		noSecret(t, ns, "regcred")
		pullSecretsAre(t, ns, "builder", []string{}, "")
	}
}

func TestImagePullSecretForRefusesASourceThatIsNotDockerConfigJSON(t *testing.T) {
	const c = "pullopaque"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	source := createSecret(t, makeSecret(src, "notreg"))
	sa := serviceAccount(t, a, "builder", "theirs")
	createSync(t, makeSync(c, src, c, sourceName("notreg"), pullSecretFor("builder")))

	ss := waitReason(t, c, "NotDockerConfigJSON")
	if !strings.Contains(readyOf(ss).Message, "notreg") {
		t.Errorf("message %q does not name the copy", readyOf(ss).Message)
	}
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	eventually(t, "a NotDockerConfigJSON Warning Event", func() error {
		if len(warningEvents(t, c, "NotDockerConfigJSON")) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	if now := getServiceAccount(t, a, "builder"); now.ResourceVersion != sa.ResourceVersion {
		t.Errorf("the ServiceAccount was written: %v, annotations %v", pullSecretNames(now), now.Annotations)
	}
}

// readyOf returns the Ready condition (the caller made sure it exists).
func readyOf(ss *v1alpha1.SecretSync) metav1.Condition {
	for _, c := range ss.Status.Conditions {
		if c.Type == copyplan.ConditionReady {
			return c
		}
	}
	return metav1.Condition{}
}

// quiet waits until the controller has finished no reconcile, and had nothing queued or
// running, for longer than its shortest requeue (1 s): work it scheduled for later is done too.
func quiet(t *testing.T) {
	t.Helper()
	const still = 1200 * time.Millisecond
	n, since := reconciles(t), time.Now()
	eventually(t, "the controller is quiet", func() error {
		if m := reconciles(t); m != n || controllerBusy(t) > 0 {
			n, since = m, time.Now()
		}
		if time.Since(since) < still {
			return errors.New("reconciling")
		}
		return nil
	})
}

// passesWithin counts the passes of the SecretSync name that start within d. A fixed wait: it
// measures what should not happen (requeues of a SecretSync with nothing to do), so it is kept
// short. Counted per SecretSync, so that a requeue left by an earlier test's SecretSync (a
// recheck that wakes after its deletion) is not taken for a loop of this one.
func passesWithin(t *testing.T, name string, d time.Duration) int64 {
	t.Helper()
	before := passesOf(name)
	time.Sleep(d)
	return passesOf(name) - before
}

func TestNothingChangedMeansNoWrites(t *testing.T) {
	const c = "nowrites"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	selected := map[string]string{"sync": "yes"}
	var sources []*corev1.Secret
	for _, n := range []string{"reg1", "reg2"} {
		sources = append(sources, createSecret(t, makeSecret(src, n, withLabels(selected), withType(corev1.SecretTypeDockerConfigJson),
			withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)}))))
	}
	serviceAccount(t, a, "builder")
	serviceAccount(t, b, "builder", "theirs")
	createSync(t, makeSync(c, src, c, sourceSelector(selected), pullSecretFor("builder")))
	waitReady(t, c, 4)
	pullSecretsAre(t, a, "builder", []string{"reg1", "reg2"}, "reg1,reg2")
	pullSecretsAre(t, b, "builder", []string{"theirs", "reg1", "reg2"}, "reg1,reg2")
	quiet(t)

	objects := func() map[string]string {
		var objs []client.Object
		for _, ns := range []string{a, b} {
			for _, s := range sources {
				objs = append(objs, getSecret(t, ns, s.Name))
			}
			objs = append(objs, getServiceAccount(t, ns, "builder"))
		}
		return rvs(append(objs, getSync(t, c))...)
	}
	before, writesBefore, eventsBefore := objects(), writes(t, c), eventsAbout(t, c)
	reconcilesBefore, requestsBefore := reconciles(t), writeRequestsBy(t)

	// Wake the controller without changing anything it owns: a namespace's labels change (every
	// SecretSync is enqueued), and a source gets an annotation (not copied).
	setNamespaceLabel(t, namespace(t, c+"-unrelated", nil), "touched", "yes")
	eventually(t, "annotating a source", func() error {
		s := getSecret(t, src, "reg1")
		s.Annotations = map[string]string{"note.example.com/touched": "yes"}
		return k8s.Update(ctx, s)
	})
	settle(t, reconcilesBefore)
	// Nothing was requeued either (a requeue of this controller comes back within a second).
	if n := passesWithin(t, c, 1500*time.Millisecond); n != 0 {
		t.Errorf("%v passes of an idle SecretSync within 1.5s, want none (a requeue loop?)", n)
	}

	if diff := diffRVs(before, objects()); diff != "" {
		t.Errorf("objects written with nothing to do: %s", diff)
	}
	if got := writes(t, c) - writesBefore; got != 0 {
		t.Errorf("%v writes counted with nothing to do, want 0", got)
	}
	// The one write request is the test's own: the annotation on the source. (This SecretSync's
	// Events are counted below, by object.)
	if diff := diffRequests(requestsBefore, writeRequestsBy(t)); diff != "PUT secrets/ +1" {
		t.Errorf("write requests to the API server: %s; want only PUT secrets/ +1 (the test's own)", diff)
	}
	if got := eventsAbout(t, c) - eventsBefore; got != 0 {
		t.Errorf("%d new Events with nothing to do, want 0", got)
	}
	if n := reconciles(t) - reconcilesBefore; n < 1 {
		t.Errorf("%v reconciles, want at least one (the check above proved nothing)", n)
	}
}

func TestTheManagerCachesOnlyTheSecretsItManages(t *testing.T) {
	const c = "cache"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	unrelated := createSecret(t, makeSecret(a, "unrelated"))
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)

	cached := &corev1.Secret{}
	eventually(t, "the copy is in the manager's cache", func() error {
		return mgr.GetCache().Get(ctx, types.NamespacedName{Namespace: a, Name: "creds"}, cached)
	})
	// The unrelated Secret was created before the copy, and one informer delivers in order: had
	// the cache held it, it would be there by now.
	for _, s := range []*corev1.Secret{unrelated, source} {
		err := mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("manager cache Get %s/%s: %v, want NotFound (not a copy)", s.Namespace, s.Name, err)
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}); err != nil {
			t.Errorf("direct Get %s/%s: %v", s.Namespace, s.Name, err)
		}
	}
	list := &corev1.SecretList{}
	if err := mgr.GetCache().List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Labels[keys.LabelSecretSync] == "" {
			t.Errorf("the manager's cache holds %s/%s, which carries no %s label", s.Namespace, s.Name, keys.LabelSecretSync)
		}
	}
}

func TestAMissingSourceNamespaceIsReportedAndDeletesNothing(t *testing.T) {
	const c = "nosrcns"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	copies := []*corev1.Secret{
		copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete),
		copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete),
	}
	waitReady(t, c, 2)

	eventually(t, "pointing the SecretSync at a missing namespace", func() error {
		ss := getSync(t, c)
		ss.Spec.Source.Namespace = c + "-typo"
		return k8s.Update(ctx, ss)
	})
	ss := waitReason(t, c, "SourceNamespaceNotFound")
	if !strings.Contains(readyOf(ss).Message, c+"-typo") {
		t.Errorf("message %q does not name the missing namespace", readyOf(ss).Message)
	}
	eventually(t, "a SourceNamespaceNotFound Warning Event", func() error {
		if len(warningEvents(t, c, "SourceNamespaceNotFound")) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	idle(t)
	for _, cp := range copies {
		if s := getSecret(t, cp.Namespace, cp.Name); s == nil || s.ResourceVersion != cp.ResourceVersion {
			t.Errorf("copy %s/%s was deleted or written while the source namespace is missing", cp.Namespace, cp.Name)
		}
	}
}

func TestAdmissionRejectsAnInvalidSecretSync(t *testing.T) {
	foo := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Foo"}}}
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.SecretSync)
		want   string
	}{
		{"both source.name and source.selector", func(ss *v1alpha1.SecretSync) {
			ss.Spec.Source.Name = "creds"
			ss.Spec.Source.Selector = &metav1.LabelSelector{}
		}, "exactly one of source.name or source.selector"},
		{"neither source.name nor source.selector", func(*v1alpha1.SecretSync) {},
			"exactly one of source.name or source.selector"},
		{"a source selector operator Foo", func(ss *v1alpha1.SecretSync) {
			ss.Spec.Source.Selector = foo.DeepCopy()
		}, "selector.matchExpressions[].operator must be one of In, NotIn, Exists, DoesNotExist"},
		{"a namespace selector operator Foo", func(ss *v1alpha1.SecretSync) {
			ss.Spec.Source.Name = "creds"
			ss.Spec.Target.NamespaceSelector = foo.DeepCopy()
		}, "namespaceSelector.matchExpressions[].operator must be one of In, NotIn, Exists, DoesNotExist"},
		{`imagePullSecretFor "*" beside a name`, func(ss *v1alpha1.SecretSync) {
			ss.Spec.Source.Name = "creds"
			ss.Spec.ImagePullSecretFor = []string{"default", v1alpha1.AllServiceAccounts}
		}, `imagePullSecretFor: "*" already means every ServiceAccount; list it alone`},
		{`imagePullSecretFor "builder-*" (a glob is not a name)`, func(ss *v1alpha1.SecretSync) {
			ss.Spec.Source.Name = "creds"
			ss.Spec.ImagePullSecretFor = []string{"builder-*"}
		}, `spec.imagePullSecretFor[0]: Invalid value: "builder-*"`},
		{"deletionPolicy Keep", func(ss *v1alpha1.SecretSync) {
			ss.Spec.Source.Name = "creds"
			ss.Spec.DeletionPolicy = "Keep"
		}, `supported values: "Delete", "Orphan"`},
	} {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "invalid"}, Spec: v1alpha1.SecretSyncSpec{Source: v1alpha1.SecretSyncSource{Namespace: "anywhere"}}}
			tc.mutate(ss)
			err := k8s.Create(ctx, ss)
			if err == nil {
				_ = k8s.Delete(ctx, ss)
				t.Fatal("accepted")
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want Invalid containing %q", err, tc.want)
			}
		})
	}
}

func TestTheDefaultSecretSyncIsAppliedAndCopiesSecretsOfItsType(t *testing.T) {
	const c = "dflt"
	const typ = "platform-operators.io/test-default"
	src := namespace(t, c+"-src", nil)
	// The default SecretSync selects every namespace: this one needs no label.
	a := namespace(t, c+"-a", nil)
	d := &Default{Name: c + "-default", SourceNamespace: src, Type: typ}
	// Cleanups run last first: the controller stops (startDefault) before the SecretSync is deleted.
	t.Cleanup(func() {
		err := k8s.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: d.Name}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the default SecretSync: %v", err)
		}
		eventually(t, "the default SecretSync's copies are cleaned up", func() error {
			left, err := labelledCopies(d.Name)
			if err != nil || len(left) > 0 {
				return fmt.Errorf("%d copies left (%w)", len(left), err)
			}
			return nil
		})
	})
	startDefault(t, d, nil)

	eventually(t, "the default SecretSync exists", func() error {
		ss := &v1alpha1.SecretSync{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: d.Name}, ss); err != nil {
			return err
		}
		s := ss.Spec
		if s.Source.Namespace != src || string(s.Source.Type) != typ || s.Source.Name != "" || s.Source.Selector == nil ||
			len(s.Source.Selector.MatchLabels)+len(s.Source.Selector.MatchExpressions) != 0 || s.Target.NamespaceSelector != nil ||
			s.DeletionPolicy != v1alpha1.DeletionPolicyDelete {
			return fmt.Errorf("spec = %+v, want every Secret of type %s in %s copied everywhere", s, typ, src)
		}
		return nil
	})
	source := createSecret(t, makeSecret(src, c+"-cred", withType(typ), withData(map[string][]byte{"bin": binary})))
	createSecret(t, makeSecret(src, c+"-other"))
	copyIn(t, a, source, d.Name, v1alpha1.DeletionPolicyDelete)
	eventually(t, "the default SecretSync is Ready with one source", func() error {
		ss := getSync(t, d.Name)
		if err := statusIs(ss, metav1.ConditionTrue, "Synced"); err != nil {
			return err
		}
		if ss.Status.Sources != 1 || ss.Status.Synced != ss.Status.Desired || ss.Status.Desired != ss.Status.Targets {
			return fmt.Errorf("status = %+v, want 1 source, all copies synced", ss.Status)
		}
		return nil
	})
	if s := getSecret(t, a, c+"-other"); s != nil {
		t.Errorf("a Secret of another type was copied: %s", s.Type)
	}
}
