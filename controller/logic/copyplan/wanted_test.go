package copyplan

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// TestWanted pins the copy the reconciler wants (and `kubectl platform why` compares with):
// the spec's name, metadata and keys applied, the policy recorded, no proof.
func TestWanted(t *testing.T) {
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "harbor", Labels: map[string]string{"team": "platform", "other": "x"}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"ca.crt": []byte("ca"), "tls.key": []byte("key")}}
	cases := []struct {
		name        string
		spec        v1alpha1.SecretSyncSpec
		wantName    string
		wantData    map[string][]byte
		wantLabels  map[string]string
		wantPolicy  string
		wantMissing []string
	}{
		{"the default copy has the source's name, data and type, and the policy Delete", v1alpha1.SecretSyncSpec{},
			"harbor", src.Data, map[string]string{keys.LabelSecretSync: "s", keys.LabelManagedBy: keys.ManagedByValue}, "Delete", nil},
		{"target.name, sourceLabels, labels and keys apply", v1alpha1.SecretSyncSpec{DeletionPolicy: v1alpha1.DeletionPolicyOrphan,
			Target: v1alpha1.SecretSyncTarget{Name: "regcred", SourceLabels: []string{"team"}, Labels: map[string]string{"reload": "yes"}},
			Keys:   &v1alpha1.SecretSyncKeys{Include: []string{"ca.crt", "missing"}, Rename: []v1alpha1.KeyRename{{From: "ca.crt", To: "ca-bundle.crt"}}}},
			"regcred", map[string][]byte{"ca-bundle.crt": []byte("ca")},
			map[string]string{keys.LabelSecretSync: "s", keys.LabelManagedBy: keys.ManagedByValue, "team": "platform", "reload": "yes"}, "Orphan", []string{"missing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: tc.spec}
			w, missing := Wanted(ss, src, "team-a")
			if w.Name != tc.wantName || w.Namespace != "team-a" || w.Type != src.Type {
				t.Errorf("copy %s/%s of type %s", w.Namespace, w.Name, w.Type)
			}
			if d := cmp.Diff(tc.wantData, w.Data); d != "" {
				t.Errorf("data (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantLabels, w.Labels); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantMissing, missing); d != "" {
				t.Errorf("missing (-want +got):\n%s", d)
			}
			if w.Annotations[keys.AnnotationDeletionPolicy] != tc.wantPolicy || w.Annotations[keys.AnnotationSource] != "secretsync/harbor" {
				t.Errorf("annotations %v", w.Annotations)
			}
			if _, ok := w.Annotations[keys.AnnotationOwnership]; ok {
				t.Error("Wanted must not sign: the proof is the manager's")
			}
		})
	}
}

func TestCopyNames(t *testing.T) {
	src := func(name string) *corev1.Secret { return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	cases := []struct {
		name    string
		spec    v1alpha1.SecretSyncSpec
		sources []*corev1.Secret
		want    []string
	}{
		{"target.name names the copy", v1alpha1.SecretSyncSpec{Source: v1alpha1.SecretSyncSource{Name: "harbor"}, Target: v1alpha1.SecretSyncTarget{Name: "regcred"}}, []*corev1.Secret{src("harbor")}, []string{"regcred"}},
		{"a named source names its copy, read or not", v1alpha1.SecretSyncSpec{Source: v1alpha1.SecretSyncSource{Name: "harbor"}}, nil, []string{"harbor"}},
		{"a selector's sources name theirs, sorted, once each", v1alpha1.SecretSyncSpec{}, []*corev1.Secret{src("b"), src("a"), src("b")}, []string{"a", "b"}},
		{"a selector with its sources unknown names none", v1alpha1.SecretSyncSpec{}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss := &v1alpha1.SecretSync{Spec: tc.spec}
			if d := cmp.Diff(tc.want, CopyNames(ss, tc.sources)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			for _, s := range tc.sources {
				if w, _ := Wanted(ss, s, "team-a"); !slices.Contains(CopyNames(ss, tc.sources), w.Name) {
					t.Errorf("Wanted names %s's copy %s, CopyNames does not", s.Name, w.Name)
				}
			}
		})
	}
}
