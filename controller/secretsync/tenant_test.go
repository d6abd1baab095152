package secretsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

// The attacks of a tenant with namespaced rights on SecretSyncs and CopyRequests
// (docs/secretsync.md, "Tenants"), each refused or harmless.

// A tenant's own Secret labelled with an existing SecretSync's name (as a copied manifest or a
// restore carries it) is never deleted or rewritten: it has no ownership proof and data of its
// own. Both places are tried: one the SecretSync does not target (which a copy there would be
// deleted from) and the place of a wanted copy (which a copy there would be overwritten at).
// The SecretSync reports both, with a Warning Event in the manager's namespace.
func TestATenantsSecretWithOurLabelIsNeverDeletedOrRewritten(t *testing.T) {
	const c = "claimed"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	elsewhere := namespace(t, c+"-elsewhere", nil)
	createSecret(t, makeSecret(src, "creds"))
	mine := map[string][]byte{"mine": []byte("keep")}
	claimed := map[string]string{keys.LabelSecretSync: c}
	notTargeted := createSecret(t, makeSecret(elsewhere, "mine", withData(mine), withLabels(claimed)))
	atTheCopy := createSecret(t, makeSecret(a, "creds", withData(mine), withLabels(claimed)))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	// Before createSync's clean-up, which waits for every object with the label to go: these
	// stay, by design, when their SecretSync goes.
	t.Cleanup(func() {
		for _, s := range []*corev1.Secret{notTargeted, atTheCopy} {
			_ = k8s.Delete(context.Background(), s)
		}
	})

	ss := waitReason(t, c, "Conflict")
	if ss.Status.Conflicts != 2 {
		t.Errorf("status = %+v, want the 2 labelled Secrets reported as conflicts", ss.Status)
	}
	for _, f := range ss.Status.Failures {
		if !strings.Contains(f.Message, "no valid ownership proof") {
			t.Errorf("failure %+v does not say the proof is missing", f)
		}
	}
	eventually(t, "a Conflict Warning Event in the manager's namespace", func() error {
		evs := warningEvents(t, c, "Conflict")
		if len(evs) == 0 {
			return errors.New("none yet")
		}
		for _, e := range evs {
			if e.Namespace != ownershipNS {
				return fmt.Errorf("the Event is in namespace %q, want %q", e.Namespace, ownershipNS)
			}
		}
		return nil
	})
	// A recheck, then a look: nothing was written to either.
	before := reconciles(t)
	setNamespaceLabel(t, namespace(t, c+"-unrelated", nil), "touched", "yes")
	settle(t, before)
	for _, s := range []*corev1.Secret{notTargeted, atTheCopy} {
		now := getSecret(t, s.Namespace, s.Name)
		if now == nil {
			t.Fatalf("the tenant's Secret %s/%s was deleted", s.Namespace, s.Name)
		}
		if now.ResourceVersion != s.ResourceVersion {
			t.Errorf("the tenant's Secret %s/%s was written (resourceVersion %s -> %s)", s.Namespace, s.Name, s.ResourceVersion, now.ResourceVersion)
		}
		if err := sameData(now.Data, mine); err != nil {
			t.Errorf("the tenant's Secret %s/%s lost its data: %v", s.Namespace, s.Name, err)
		}
	}
}

// A copy made by a version before the proofs (our label, no proof) whose data is the source's
// is adopted: the proof is written, and the tenant's own metadata on it stays.
func TestAnOlderCopyWithTheSourcesDataIsAdopted(t *testing.T) {
	const c = "adopt"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"token": []byte("v1")})))
	old := createSecret(t, makeSecret(a, "creds", withData(source.Data),
		withLabels(map[string]string{keys.LabelSecretSync: c, keys.LabelManagedBy: keys.ManagedByValue, "team": "a"})))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	got := copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete) // isCopy checks the proof
	if got.UID != old.UID || got.Labels["team"] != "a" {
		t.Errorf("the older copy was replaced (uid %s -> %s) or lost the tenant's label: %v", old.UID, got.UID, got.Labels)
	}
	waitReady(t, c, 1)
}

// A tenant that received a copy labels it as an offer to every namespace: a namespace the
// SecretSync does not target asks for it with a CopyRequest and is refused, and the repair takes
// our keys off the copy (keeping the tenant's own).
func TestACopyIsNeverAnOfferAndOurKeysOnItAreRepaired(t *testing.T) {
	const c = "reoffer"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	excluded := namespace(t, c+"-excluded", nil)
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"token": []byte("secret")})))
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)

	updateSecret(t, a, "creds", func(s *corev1.Secret) {
		s.Labels[keys.LabelOffer] = "true"
		s.Labels["team"] = "a"
		s.Labels[keys.Prefix+"made-up"] = "x"
		s.Annotations[keys.AnnotationOfferNamespaces] = "*"
	})
	createRequest(t, k8s, makeRequest(excluded, "steal", v1alpha1.CopyRequestSource{Namespace: a, Name: "creds"}, ""))
	waitRequest(t, excluded, "steal", metav1.ConditionFalse, copyplan.ReasonNotOffered)
	if s := getSecret(t, excluded, "creds"); s != nil {
		t.Errorf("the excluded namespace received the copy: %v", s.Labels)
	}
	eventually(t, "our keys are taken off the copy", func() error {
		s := getSecret(t, a, "creds")
		if s == nil {
			return errors.New("no copy")
		}
		for _, k := range []string{keys.LabelOffer, keys.Prefix + "made-up"} {
			if _, ok := s.Labels[k]; ok {
				return fmt.Errorf("label %s still there", k)
			}
		}
		if _, ok := s.Annotations[keys.AnnotationOfferNamespaces]; ok {
			return errors.New("the offer's namespaces are still there")
		}
		if s.Labels["team"] != "a" {
			return fmt.Errorf("the tenant's own label is gone: %v", s.Labels)
		}
		return isCopy(s, source, c, v1alpha1.DeletionPolicyDelete)
	})
}

// Replicas starting together agree on one key: each creates it if absent, the loser of the race
// reads the winner's.
func TestReplicasAgreeOnTheOwnershipKey(t *testing.T) {
	const name = "race-key"
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Go(func() {
			p, err := LoadOwnershipKey(context.Background(), k8s, ownershipNS, name)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = p.Sign("Secret", "ns", "n", keys.LabelSecretSync, "s")
		})
	}
	wg.Wait()
	for _, g := range got[1:] {
		if g != got[0] {
			t.Fatalf("replicas made different proofs: %q", got)
		}
	}
	s := getSecret(t, ownershipNS, name)
	if s == nil || !isTrue(s.Immutable) || s.Labels[keys.LabelManagedBy] != keys.ManagedByValue || s.Labels["app.kubernetes.io/component"] != ComponentOwnershipKey || len(s.Data[ownershipKeyField]) != ownershipKeyBytes {
		t.Errorf("key Secret = %+v", s)
	}
	if _, err := LoadOwnershipKey(context.Background(), k8s, ownershipNS, name); err != nil {
		t.Error(err)
	}
	short := makeSecret(ownershipNS, "short-key", withData(map[string][]byte{ownershipKeyField: []byte("short")}))
	createSecret(t, short)
	if _, err := LoadOwnershipKey(context.Background(), k8s, ownershipNS, "short-key"); err == nil {
		t.Error("a short key was accepted")
	}
}
