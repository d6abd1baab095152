package propagation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// serviceAccount is team-a/builder as stored, with the given annotations and imagePullSecrets in
// order.
func serviceAccount(annotations map[string]string, listed ...string) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       "team-a",
			Name:            "builder",
			UID:             "5a-builder",
			ResourceVersion: "31",
			Labels:          map[string]string{"team": "a"},
			Annotations:     annotations,
		},
		Secrets: []corev1.ObjectReference{{Name: "builder-token"}},
	}
	for _, n := range listed {
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
	}
	return sa
}

// claimed is the annotations of a ServiceAccount on which we added names.
func claimed(names string) map[string]string {
	return map[string]string{keys.AnnotationPullSecrets: names}
}

func TestPullSecrets(t *testing.T) {
	cases := []struct {
		name        string
		sa          *corev1.ServiceAccount
		want, known map[string]bool
		// result is the ServiceAccount expected back; nil means the input itself, unchanged.
		result  *corev1.ServiceAccount
		changed bool
	}{
		{
			name:    "wanted names are added in sorted order and recorded as ours",
			sa:      serviceAccount(nil),
			want:    set("b-creds", "a-creds", "c-creds"),
			known:   set("a-creds", "b-creds", "c-creds"),
			result:  serviceAccount(claimed("a-creds,b-creds,c-creds"), "a-creds", "b-creds", "c-creds"),
			changed: true,
		},
		{
			name:    "wanted names go after the entries already listed",
			sa:      serviceAccount(nil, "corp-registry"),
			want:    set("a-creds"),
			known:   set("a-creds"),
			result:  serviceAccount(claimed("a-creds"), "corp-registry", "a-creds"),
			changed: true,
		},
		{
			name:    "other annotations stay when ours is written",
			sa:      serviceAccount(map[string]string{"note": "keep"}),
			want:    set("a-creds"),
			known:   set("a-creds"),
			result:  serviceAccount(map[string]string{"note": "keep", keys.AnnotationPullSecrets: "a-creds"}, "a-creds"),
			changed: true,
		},
		{
			name:  "a wanted entry someone else added is neither added again nor claimed",
			sa:    serviceAccount(nil, "a-creds"),
			want:  set("a-creds"),
			known: set("a-creds"),
		},
		{
			name:    "a wanted entry someone else added is not claimed when we add others beside it",
			sa:      serviceAccount(nil, "b-creds"),
			want:    set("a-creds", "b-creds", "c-creds"),
			known:   set("a-creds", "b-creds", "c-creds"),
			result:  serviceAccount(claimed("a-creds,c-creds"), "b-creds", "a-creds", "c-creds"),
			changed: true,
		},
		{
			name:    "our entries that are known and no longer wanted are removed, and only those",
			sa:      serviceAccount(claimed("a-creds,b-creds"), "a-creds", "corp-registry", "b-creds"),
			want:    set("a-creds"),
			known:   set("a-creds", "b-creds"),
			result:  serviceAccount(claimed("a-creds"), "a-creds", "corp-registry"),
			changed: true,
		},
		{
			name:  "an entry someone else added is kept when it is known and no longer wanted",
			sa:    serviceAccount(nil, "a-creds"),
			want:  set(),
			known: set("a-creds"),
		},
		{
			name:  "an entry someone else added is kept when we have no claims but other annotations",
			sa:    serviceAccount(map[string]string{"note": "keep"}, "a-creds"),
			want:  nil,
			known: set("a-creds"),
		},
		{
			name:    "our entries known only to another SecretSync are never removed",
			sa:      serviceAccount(claimed("a-creds,c-creds"), "a-creds", "c-creds"),
			want:    set(),
			known:   set("a-creds"),
			result:  serviceAccount(claimed("c-creds"), "c-creds"),
			changed: true,
		},
		{
			name:  "our entries that are unwanted but not known are left alone",
			sa:    serviceAccount(claimed("c-creds"), "c-creds"),
			want:  set(),
			known: set("a-creds"),
		},
		{
			name:    "claims of another SecretSync stay in the annotation, sorted, when we add ours",
			sa:      serviceAccount(claimed("c-creds"), "c-creds"),
			want:    set("a-creds"),
			known:   set("a-creds"),
			result:  serviceAccount(claimed("a-creds,c-creds"), "c-creds", "a-creds"),
			changed: true,
		},
		{
			name:  "nothing to change returns the same ServiceAccount",
			sa:    serviceAccount(claimed("a-creds,b-creds"), "a-creds", "corp-registry", "b-creds"),
			want:  set("a-creds", "b-creds"),
			known: set("a-creds", "b-creds"),
		},
		{
			name:  "no wants, no known names and no claims change nothing",
			sa:    serviceAccount(nil, "corp-registry"),
			want:  nil,
			known: nil,
		},
		{
			name:    "the annotation is deleted when nothing is ours any more, and other annotations stay",
			sa:      serviceAccount(map[string]string{"note": "keep", keys.AnnotationPullSecrets: "a-creds"}, "a-creds", "corp-registry"),
			want:    set(),
			known:   set("a-creds"),
			result:  serviceAccount(map[string]string{"note": "keep"}, "corp-registry"),
			changed: true,
		},
		{
			name:    "the annotation is deleted when it was the only annotation",
			sa:      serviceAccount(claimed("a-creds,b-creds"), "a-creds", "b-creds"),
			want:    nil,
			known:   set("a-creds", "b-creds"),
			result:  serviceAccount(nil),
			changed: true,
		},
		{
			name:    "a claim on an entry someone already removed from the list is dropped",
			sa:      serviceAccount(claimed("a-creds"), "corp-registry"),
			want:    set(),
			known:   set("a-creds"),
			result:  serviceAccount(nil, "corp-registry"),
			changed: true,
		},
		{
			name:    "our wanted entry that someone removed from the list is added back",
			sa:      serviceAccount(claimed("a-creds"), "corp-registry"),
			want:    set("a-creds"),
			known:   set("a-creds"),
			result:  serviceAccount(claimed("a-creds"), "corp-registry", "a-creds"),
			changed: true,
		},
		{
			name:    "an entry can be removed and another added in one pass",
			sa:      serviceAccount(claimed("old-creds"), "old-creds", "corp-registry"),
			want:    set("new-creds"),
			known:   set("old-creds", "new-creds"),
			result:  serviceAccount(claimed("new-creds"), "corp-registry", "new-creds"),
			changed: true,
		},
		{
			// imagePullSecrets is an atomic list the API does not deduplicate, so a name we
			// added can be listed twice (a JSON patch, a hand edit). Ownership is by name: the
			// annotation claims the name, so every entry with it goes. Keeping one would leave a
			// reference to a deleted Secret that no later sync removes, since the claim is gone.
			name:    "an entry of ours listed twice and no longer wanted is removed both times",
			sa:      serviceAccount(claimed("a-creds"), "a-creds", "corp-registry", "a-creds"),
			want:    set(),
			known:   set("a-creds"),
			result:  serviceAccount(nil, "corp-registry"),
			changed: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.sa.DeepCopy()
			got, changed := PullSecrets(tc.sa, tc.want, tc.known)

			if changed != tc.changed {
				t.Errorf("PullSecrets() changed = %v, want %v", changed, tc.changed)
			}
			assertExact(t, "input ServiceAccount after PullSecrets()", tc.sa, before)
			if tc.result == nil {
				if got != tc.sa {
					t.Errorf("PullSecrets() returned a new ServiceAccount %v; want the input itself", got.ImagePullSecrets)
				}
				return
			}
			if got == tc.sa {
				t.Fatalf("PullSecrets() returned the input itself; want a changed copy")
			}
			assertSemantic(t, "PullSecrets()", got, tc.result)
			// Semantic equality treats an absent annotation like an empty map; say exactly.
			gotV, gotHas := got.Annotations[keys.AnnotationPullSecrets]
			wantV, wantHas := tc.result.Annotations[keys.AnnotationPullSecrets]
			if gotHas != wantHas || gotV != wantV {
				t.Errorf("annotation %s = %q (present %v), want %q (present %v)",
					keys.AnnotationPullSecrets, gotV, gotHas, wantV, wantHas)
			}
		})
	}
}

func TestPullSecretNames(t *testing.T) {
	docker := withType(corev1.SecretTypeDockerConfigJson)
	inStepA, inStepB := wantIn("team-a", "harbor", docker), wantIn("team-b", "harbor", docker)
	notLive := wantIn("team-c", "harbor", docker)
	taken := wantIn("team-d", "harbor", docker)
	opaque := wantIn("team-a", "creds")
	live := func(k types.NamespacedName) *corev1.Secret {
		switch k {
		case key("team-a", "harbor"), key("team-b", "harbor"), key("team-d", "harbor"), key("team-a", "creds"):
			return liveIn(k.Namespace, k.Name)
		}
		return nil
	}
	gone := liveIn("team-old", "harbor", docker)
	plan := Plan{Actions: []Action{
		{Op: OpCreate, Key: key("team-c", "harbor")},
		{Op: OpConflict, Key: key("team-d", "harbor")},
		{Op: OpDelete, Key: key("team-old", "harbor")},
	}}
	want := []*corev1.Secret{inStepA, inStepB, notLive, taken, opaque}

	wanted, known, notDocker := PullSecretNames(plan, want, live, []*corev1.Secret{gone}, true)
	assertSemantic(t, "wanted", wanted, map[string]map[string]bool{
		// team-c: not created yet; team-d: held by another owner; team-old: being removed.
		"team-a": {"harbor": true}, "team-b": {"harbor": true},
	})
	// team-d's copy is another owner's: the entry of that name is that owner's to keep or
	// remove, or two SecretSyncs wanting one name would remove each other's entry forever.
	assertSemantic(t, "known", known, map[string]map[string]bool{
		"team-a": {"harbor": true, "creds": true}, "team-b": {"harbor": true}, "team-c": {"harbor": true},
		"team-old": {"harbor": true},
	})
	assertSemantic(t, "notDocker", notDocker, []string{"creds"})

	t.Run("without ServiceAccounts to fill nothing is wanted and no type is reported", func(t *testing.T) {
		wanted, known, notDocker := PullSecretNames(plan, want, live, []*corev1.Secret{gone}, false)
		if len(wanted) != 0 || notDocker != nil {
			t.Errorf("wanted %v, notDocker %v; want none", wanted, notDocker)
		}
		if !known["team-old"]["harbor"] || !known["team-a"]["creds"] {
			t.Errorf("known %v: the copies managed must still be known, so our entries can go", known)
		}
	})
}
