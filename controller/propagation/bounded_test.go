package propagation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// hostile is a copy as a tenant can shape it: 1 MiB of data, 200 KiB of annotations of its own,
// many labels, our keys with huge values and many keys that look like ours.
func hostile() *corev1.Secret {
	s := inStepBase(withData("blob", strings.Repeat("x", 1<<20)))
	for i := range 200 {
		s.Annotations[fmt.Sprintf("tenant.example/a%03d", i)] = strings.Repeat("y", 1024)
		s.Labels[fmt.Sprintf("tenant.example/l%03d", i)] = strings.Repeat("z", 63)
		s.Labels[fmt.Sprintf("%sx%03d", keys.Prefix, i)] = "v"
		s.Annotations[fmt.Sprintf("%sy%03d", keys.Prefix, i)] = strings.Repeat("w", 1024)
	}
	s.Annotations[keys.AnnotationSource] = strings.Repeat("s", 100<<10)
	s.Annotations[keys.AnnotationMetadataKeys] = "labels=" + strings.Repeat("k,", 50<<10)
	s.Annotations[keys.AnnotationOfferNamespaces] = strings.Repeat("n,", 50<<10)
	return s
}

// size is a rough count of the bytes an object's strings and data hold.
func size(s *corev1.Secret) int {
	n := len(s.Name) + len(s.Namespace) + len(s.UID) + len(s.ResourceVersion) + len(s.Type)
	for k, v := range s.Labels {
		n += len(k) + len(v)
	}
	for k, v := range s.Annotations {
		n += len(k) + len(v)
	}
	for k, v := range s.Data {
		n += len(k) + len(v)
	}
	return n
}

// Whatever a tenant puts on an object carrying our keys, the cache keeps a bounded form.
func TestBoundedKeepsABoundedFormOfAHostileObject(t *testing.T) {
	in := hostile()
	got := Bounded(in)
	if got.Data != nil {
		t.Errorf("data kept")
	}
	// Our 6 known annotations at their bound, 8 foreign keys of ours in each map, 3 cache records.
	limit := 6*(len(keys.AnnotationOfferNamespaces)+maxCachedValue) + 2*maxForeignKeys*(len(keys.Prefix)+10) + 3*100 + 1024
	if n := size(got); n > limit {
		t.Errorf("bounded form holds %d bytes of strings, want at most %d (the object held %d)", n, limit, size(in))
	}
	for k := range got.Labels {
		if strings.HasPrefix(k, "tenant.example/") {
			t.Errorf("a tenant's label %q kept", k)
		}
	}
	for k := range got.Annotations {
		if strings.HasPrefix(k, "tenant.example/") {
			t.Errorf("a tenant's annotation %q kept", k)
		}
	}
	if len(got.Labels) > 3+maxForeignKeys || len(got.Annotations) > len(knownAnnotations)+maxForeignKeys+len(cacheOnly) {
		t.Errorf("kept %d labels and %d annotations", len(got.Labels), len(got.Annotations))
	}
	// The answers the plan needs are those of the object itself.
	want := inStepWant()
	if InStep(got, want) != InStep(in, want) || NeedsReplace(got, want) != NeedsReplace(in, want) {
		t.Errorf("the bounded form answers InStep/NeedsReplace otherwise than the object")
	}
}

// A long value of ours (here a legitimately long source reference) is kept as its digest, and
// still compares equal with the same wanted value: no write loop for long values.
func TestALongValueComparesByItsDigest(t *testing.T) {
	long := strings.Repeat("s", 2*maxCachedValue)
	cur := Bounded(inStepBase(withAnnotation(keys.AnnotationSource, long)))
	if v := cur.Annotations[keys.AnnotationSource]; len(v) > maxCachedValue {
		t.Fatalf("kept %d bytes of the value", len(v))
	}
	if !InStep(cur, inStepWant(withAnnotation(keys.AnnotationSource, long))) {
		t.Errorf("the same long value is out of step")
	}
	if InStep(cur, inStepWant(withAnnotation(keys.AnnotationSource, long+"!"))) {
		t.Errorf("another long value is in step")
	}
}

// A tenant cannot forge the cache's records: an object from the API that carries them is
// digested as it is.
func TestTheCachesRecordsFromTheAPIAreNotTrusted(t *testing.T) {
	want := inStepWant()
	forged := inStepBase(withData(), withAnnotation(keys.AnnotationDataDigest, contentDigest(want)),
		withAnnotation(keys.AnnotationMetadataDigest, "x"))
	got := Bounded(forged)
	if InStep(got, want) {
		t.Errorf("a forged data digest made an empty copy in step")
	}
	if got.Annotations[keys.AnnotationDataDigest] != DataDigest(nil) {
		t.Errorf("digest %q, want that of no data", got.Annotations[keys.AnnotationDataDigest])
	}
}

// At most maxForeignKeys foreign keys of ours are kept by name; Merged removes those, and the
// next bounded form shows the next ones, until none is left.
func TestManyForeignKeysOfOursAreRemovedInBoundedSteps(t *testing.T) {
	live := inStepBase()
	for i := range 20 {
		live.Labels[fmt.Sprintf("%sx%02d", keys.Prefix, i)] = "v"
	}
	want := inStepWant()
	for pass := 0; ; pass++ {
		if pass > 3 {
			t.Fatalf("foreign keys still there after %d passes: %v", pass, live.Labels)
		}
		cur := Bounded(live)
		if InStep(cur, want) {
			break
		}
		ls, _ := Changes(cur, Merged(cur, want))
		for k, v := range ls {
			if v == nil {
				delete(live.Labels, k)
			} else {
				live.Labels[k] = *v
			}
		}
	}
	for k := range live.Labels {
		if strings.HasPrefix(k, keys.Prefix+"x") {
			t.Errorf("label %q left", k)
		}
	}
}

// Changes names exactly the keys an update writes: ours and the SecretSync's, never the
// tenant's.
func TestChangesTouchOnlyOurKeys(t *testing.T) {
	cur := Bounded(inStepBase(withLabel("team", "a"), withLabel(keys.LabelOffer, "true"), withAnnotation("note", "keep")))
	want := inStepWant(withAnnotation(keys.AnnotationOwnership, "v1:p"))
	ls, as := Changes(cur, Merged(cur, want))
	if _, ok := ls["team"]; ok {
		t.Errorf("the tenant's label is in the update: %v", ls)
	}
	if _, ok := as["note"]; ok {
		t.Errorf("the tenant's annotation is in the update: %v", as)
	}
	if v, ok := ls[keys.LabelOffer]; !ok || v != nil {
		t.Errorf("the offer label is not removed: %v", ls)
	}
	if v := as[keys.AnnotationOwnership]; v == nil || *v != "v1:p" {
		t.Errorf("the proof is not written: %v", as)
	}
	for _, k := range cacheOnly {
		if _, ok := as[k]; ok {
			t.Errorf("the cache's record %q is in the update", k)
		}
	}
}

func TestOwnershipProofs(t *testing.T) {
	p := NewProver([]byte("0123456789abcdef0123456789abcdef"))
	other := NewProver([]byte("fedcba9876543210fedcba9876543210"))
	owner := SecretSyncOwner(syncName)
	proven := func(opts ...secretOption) *corev1.Secret {
		s := inStepBase(opts...)
		p.Prove(s, owner)
		return s
	}
	moved := proven()
	moved.Namespace = "team-b"
	renamed := proven()
	renamed.Name = "other"
	relabelled := proven()
	relabelled.Labels[keys.LabelSecretSync] = "another-sync"
	foreign := inStepBase()
	other.Prove(foreign, owner)
	asConfigMap := proven()
	asConfigMap.Type = TypeConfigMap
	for _, tc := range []struct {
		name string
		s    *corev1.Secret
		want bool
	}{
		{"a copy the manager proved", proven(), true},
		{"the same, as the cache holds it", Bounded(proven()), true},
		{"a copy without a proof", inStepBase(), false},
		{"a proof moved to another namespace", moved, false},
		{"a proof moved to another name", renamed, false},
		{"a proof for another owner", relabelled, false},
		{"a proof under another installation's key", foreign, false},
		{"a Secret's proof on a ConfigMap", asConfigMap, false},
		{"a proof without the label", proven(withoutLabel(keys.LabelSecretSync)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Proven(tc.s, keys.LabelSecretSync); got != tc.want {
				t.Errorf("Proven = %v, want %v", got, tc.want)
			}
		})
	}
}

// The plan never writes an object labelled for the owner whose ownership it cannot prove,
// unless nothing in it could be lost.
func TestAKeyRingSignsWithTheNewestAndAcceptsEvery(t *testing.T) {
	oldKey, newKey := []byte("0123456789abcdef0123456789abcdef"), []byte("fedcba9876543210fedcba9876543210")
	before, ring, after := NewProver(oldKey), NewProver(oldKey, newKey), NewProver(newKey)
	owner := SecretSyncOwner(syncName)
	owner.Proven = func(s *corev1.Secret) bool { return ring.Proven(s, keys.LabelSecretSync) }
	signedBy := func(p *Prover) *corev1.Secret { s := inStepBase(); p.Prove(s, owner); return s }
	for _, tc := range []struct {
		name   string
		s      *corev1.Secret
		proven bool
	}{
		{"a copy signed before the rotation is proven", signedBy(before), true},
		{"a copy signed after it is proven", signedBy(after), true},
		{"a copy signed under a key not in the ring is not", signedBy(NewProver([]byte("another-installation-key-32bytes!"))), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ring.Proven(tc.s, keys.LabelSecretSync); got != tc.proven {
				t.Errorf("Proven = %v, want %v", got, tc.proven)
			}
		})
	}
	t.Run("the ring signs with the newest key", func(t *testing.T) {
		if a, b := signedBy(ring).Annotations[keys.AnnotationOwnership], signedBy(after).Annotations[keys.AnnotationOwnership]; a != b {
			t.Errorf("ring signs %q, the newest key alone %q", a, b)
		}
	})
	t.Run("a copy under the older key is re-signed by one update, not left or replaced", func(t *testing.T) {
		want := inStepWant()
		ring.Prove(want, owner)
		cur := Bounded(signedBy(before))
		plan := ComputeFor(owner, []*corev1.Secret{want}, func(types.NamespacedName) *corev1.Secret { return cur }, []*corev1.Secret{cur}, PolicyDelete)
		if len(plan.Actions) != 1 || plan.Actions[0].Op != OpUpdate || plan.Actions[0].Want.Annotations[keys.AnnotationOwnership] != want.Annotations[keys.AnnotationOwnership] {
			t.Fatalf("actions %+v, want one update writing the newest key's proof", plan.Actions)
		}
	})
}

func TestComputeWithOwnershipProofs(t *testing.T) {
	p := NewProver([]byte("0123456789abcdef0123456789abcdef"))
	owner := SecretSyncOwner(syncName)
	owner.Proven = func(s *corev1.Secret) bool { return p.Proven(s, keys.LabelSecretSync) }
	owner.Expendable = func(s *corev1.Secret) bool { return dataMatches(s, inStepWant()) }
	want := inStepWant()
	p.Prove(want, owner)
	key := types.NamespacedName{Namespace: "team-a", Name: credsName}
	for _, tc := range []struct {
		name   string
		cur    *corev1.Secret
		wanted bool
		op     Op
	}{
		{"a tenant's labelled Secret with its own data, where a copy is wanted, is a conflict", inStepBase(withData("mine", "x")), true, OpConflict},
		{"a tenant's labelled Secret where no copy is wanted is a conflict, never deleted", inStepBase(withData("mine", "x")), false, OpConflict},
		{"an older version's copy (no proof) with the source's data is adopted", inStepBase(), true, OpUpdate},
		{"an older version's copy no longer wanted, with the source's data, is removed", inStepBase(), false, OpDelete},
		{"an unproven immutable Secret with the source's data, which only a replace could adopt, is a conflict, never replaced", inStepBase(withImmutable(true)), true, OpConflict},
		{"a proven immutable copy of a mutable source is replaced", func() *corev1.Secret { s := inStepBase(withImmutable(true)); p.Prove(s, owner); return s }(), true, OpReplace},
		{"an unproven Secret being deleted with the source's data is held, not written", inStepBase(beingDeleted()), true, OpHeld},
		{"a proven copy with stale data is updated", func() *corev1.Secret { s := inStepBase(withData("old", "x")); p.Prove(s, owner); return s }(), true, OpUpdate},
		{"a proven copy no longer wanted is removed", func() *corev1.Secret { s := inStepBase(withData("old", "x")); p.Prove(s, owner); return s }(), false, OpDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := Bounded(tc.cur)
			var ws []*corev1.Secret
			if tc.wanted {
				ws = []*corev1.Secret{want}
			}
			plan := ComputeFor(owner, ws, func(k types.NamespacedName) *corev1.Secret {
				if k == key {
					return cur
				}
				return nil
			}, []*corev1.Secret{cur}, PolicyDelete)
			if len(plan.Actions) != 1 || plan.Actions[0].Op != tc.op {
				t.Fatalf("actions %+v, want one %s", plan.Actions, tc.op)
			}
		})
	}
}

// Changes is what an update of cur to merged (Merged(cur, want)) writes of the labels and
// annotations: each key it sets, with its value, or removes, with nil. A patch of these (and of
// the data, whole) needs nothing of cur that a cache's bounded form lacks.
func Changes(cur, merged *corev1.Secret) (labels, annotations map[string]*string) {
	ls, as := changedKeys(cur, merged)
	pick := func(m map[string]string, ks []string) map[string]*string {
		out := make(map[string]*string, len(ks))
		for _, k := range ks {
			if v, ok := m[k]; ok {
				out[k] = &v
			} else {
				out[k] = nil
			}
		}
		return out
	}
	return pick(merged.Labels, ls), pick(merged.Annotations, as)
}
