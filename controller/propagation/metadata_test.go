package propagation

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

func metaSource() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "src", Name: "creds",
		Labels: map[string]string{"app.kubernetes.io/name": "harbor", "app.kubernetes.io/managed-by": "Helm",
			"team": "platform", "ops.platform-operators.io/secretsync": "spoof"},
		Annotations: map[string]string{"reloader.stakater.com/match": "true", "kubectl.kubernetes.io/last-applied-configuration": "{}",
			"note": "source only"}},
		Data: map[string][]byte{"k": []byte("v")}}
}

func TestWithMetadata(t *testing.T) {
	for _, tc := range []struct {
		name            string
		m               Metadata
		wantLabels      map[string]string // besides our own
		wantAnnotations map[string]string // besides our own and the record
		wantRecord      string
	}{
		{name: "nothing asked: nothing travels, no record", m: Metadata{},
			wantLabels: map[string]string{}, wantAnnotations: map[string]string{}},
		{name: "extra labels and annotations on every copy",
			m:               Metadata{Labels: map[string]string{"argocd.argoproj.io/instance": "tenants"}, Annotations: map[string]string{"reloader.stakater.com/match": "true"}},
			wantLabels:      map[string]string{"argocd.argoproj.io/instance": "tenants"},
			wantAnnotations: map[string]string{"reloader.stakater.com/match": "true"},
			wantRecord:      "labels=argocd.argoproj.io/instance;annotations=reloader.stakater.com/match"},
		{name: "source keys by name and prefix; reserved keys never travel",
			m:               Metadata{SourceLabels: []string{"app.kubernetes.io/*", "team", "ops.platform-operators.io/*"}, SourceAnnotations: []string{"*"}},
			wantLabels:      map[string]string{"app.kubernetes.io/name": "harbor", "team": "platform"},
			wantAnnotations: map[string]string{"reloader.stakater.com/match": "true", "note": "source only"},
			wantRecord:      "labels=app.kubernetes.io/name,team;annotations=note,reloader.stakater.com/match"},
		{name: "the SecretSync's own value wins over the source's",
			m:          Metadata{SourceLabels: []string{"team"}, Labels: map[string]string{"team": "tenants"}},
			wantLabels: map[string]string{"team": "tenants"}, wantAnnotations: map[string]string{},
			wantRecord: "labels=team;annotations="},
		{name: "a reserved key asked for explicitly is skipped",
			m:          Metadata{Labels: map[string]string{"app.kubernetes.io/managed-by": "me", "ops.platform-operators.io/secretsync": "x"}},
			wantLabels: map[string]string{}, wantAnnotations: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Desired(metaSource(), "team-a", "ss")
			WithMetadata(w, metaSource(), tc.m)
			labels := maps.Clone(w.Labels)
			delete(labels, keys.LabelSecretSync)
			delete(labels, keys.LabelManagedBy)
			annotations := maps.Clone(w.Annotations)
			record := annotations[keys.AnnotationMetadataKeys]
			for _, k := range []string{keys.AnnotationSource, keys.AnnotationMetadataKeys} {
				delete(annotations, k)
			}
			if !maps.Equal(labels, tc.wantLabels) || !maps.Equal(annotations, tc.wantAnnotations) || record != tc.wantRecord {
				t.Errorf("labels %v, annotations %v, record %q; want %v, %v, %q", labels, annotations, record, tc.wantLabels, tc.wantAnnotations, tc.wantRecord)
			}
			if w.Labels[keys.LabelSecretSync] != "ss" || w.Labels[keys.LabelManagedBy] != keys.ManagedByValue {
				t.Errorf("our own labels were overridden: %v", w.Labels)
			}
		})
	}
}

// TestMetadataKeysFollowTheSpec: a copy is in step only with the keys the spec asks for; a key
// dropped from the spec is removed on update, while keys others added stay.
func TestMetadataKeysFollowTheSpec(t *testing.T) {
	src := metaSource()
	before := Desired(src, "team-a", "ss")
	WithMetadata(before, src, Metadata{Labels: map[string]string{"a": "1", "b": "2"}})
	cur := before.DeepCopy()
	cur.Labels["someone-else"] = "keep"
	if !InStep(cur, before) {
		t.Fatal("a copy with the wanted keys and a foreign one is not in step")
	}
	edited := cur.DeepCopy()
	edited.Labels["a"] = "changed"
	if InStep(edited, before) {
		t.Error("a copy whose extra label was edited is in step")
	}

	after := Desired(src, "team-a", "ss")
	WithMetadata(after, src, Metadata{Labels: map[string]string{"a": "1"}})
	if InStep(cur, after) {
		t.Fatal("a copy still carrying a label dropped from the spec is in step")
	}
	m := Merged(cur, after)
	if _, ok := m.Labels["b"]; ok || m.Labels["a"] != "1" || m.Labels["someone-else"] != "keep" {
		t.Errorf("merged labels %v: want b removed, a kept, someone-else kept", m.Labels)
	}
	if !InStep(m, after) {
		t.Error("the merged copy is not in step")
	}

	none := Desired(src, "team-a", "ss")
	m = Merged(cur, none)
	if _, ok := m.Annotations[keys.AnnotationMetadataKeys]; ok || m.Labels["a"] != "" || m.Labels["b"] != "" || !InStep(m, none) {
		t.Errorf("dropping every key: labels %v, annotations %v", m.Labels, m.Annotations)
	}
	// Released: the record goes, the labels stay with the Secret.
	r := Released(cur)
	if _, ok := r.Annotations[keys.AnnotationMetadataKeys]; ok || r.Labels["a"] != "1" {
		t.Errorf("released labels %v, annotations %v", r.Labels, r.Annotations)
	}
}
