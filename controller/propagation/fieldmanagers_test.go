package propagation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

func entry(manager, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestForeignFieldManagers(t *testing.T) {
	cases := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    []string
	}{
		{"our own managers, now and before the apply, are never foreign", []metav1.ManagedFieldsEntry{
			entry(FieldManager, `{"f:data":{"f:user":{}}}`), entry(LegacyFieldManager, `{"f:data":{"f:user":{}},"f:type":{}}`),
		}, nil},
		{"a tenant's label or annotation of its own is not a field the manager writes", []metav1.ManagedFieldsEntry{
			entry("kubectl-label", `{"f:metadata":{"f:labels":{"f:team":{}},"f:annotations":{"f:note":{}}}}`),
		}, nil},
		{"a data key, the type or immutability held by another manager is named", []metav1.ManagedFieldsEntry{
			entry("kubectl-edit", `{"f:data":{"f:user":{}}}`), entry("helm", `{"f:type":{}}`), entry("argocd", `{"f:immutable":{}}`),
		}, []string{"argocd", "helm", "kubectl-edit"}},
		{"a key of ours held by another manager is named, once", []metav1.ManagedFieldsEntry{
			entry("tool", `{"f:metadata":{"f:annotations":{"f:`+keys.AnnotationSource+`":{}}}}`),
			entry("tool", `{"f:metadata":{"f:labels":{"f:`+keys.LabelManagedBy+`":{}}}}`),
		}, []string{"tool"}},
		{"a ConfigMap's binaryData counts", []metav1.ManagedFieldsEntry{entry("kubectl-edit", `{"f:binaryData":{"f:k":{}}}`)}, []string{"kubectl-edit"}},
		{"at most four names are kept", []metav1.ManagedFieldsEntry{
			entry("e", `{"f:data":{}}`), entry("d", `{"f:data":{}}`), entry("c", `{"f:data":{}}`), entry("b", `{"f:data":{}}`), entry("a", `{"f:data":{}}`),
		}, []string{"a", "b", "c", "d"}},
		{"an entry that does not decode is skipped", []metav1.ManagedFieldsEntry{entry("broken", `{"f:data":`)}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ForeignFieldManagers(tc.entries); !slices.Equal(got, tc.want) {
				t.Errorf("ForeignFieldManagers() = %v, want %v", got, tc.want)
			}
		})
	}
}

// The cache's bounded form carries the names, and they change nothing of what a copy is.
func TestBoundedRecordsForeignFieldManagersWithoutChangingInStep(t *testing.T) {
	live := inStepBase()
	live.ManagedFields = []metav1.ManagedFieldsEntry{entry(FieldManager, `{"f:data":{"f:user":{}}}`), entry("kubectl-edit", `{"f:data":{"f:pass":{}}}`)}
	b := Bounded(live)
	if got := CachedForeignFieldManagers(b); !slices.Equal(got, []string{"kubectl-edit"}) {
		t.Errorf("CachedForeignFieldManagers() = %v, want [kubectl-edit]", got)
	}
	if !InStep(b, inStepWant()) {
		t.Errorf("the bounded form with the names is not in step")
	}
	if _, ok := Merged(b, inStepWant()).Annotations[fieldManagersMark]; ok {
		t.Errorf("the names would be written to the copy")
	}
	if got := CachedForeignFieldManagers(Bounded(inStepBase())); got != nil {
		t.Errorf("a copy only the manager wrote: %v", got)
	}
}

func TestLeftovers(t *testing.T) {
	recorded := func(v string) secretOption { return withAnnotation(keys.AnnotationMetadataKeys, v) }
	cases := []struct {
		name                 string
		cur, before, want    *corev1.Secret
		data, labels, annots []string
	}{
		{"a copy in step has none", inStepBase(), inStepBase(), inStepWant(), nil, nil, nil},
		{"a data key the source dropped", inStepBase(withData("user", "admin", "pass", "s3cr3t", "old", "x")), inStepBase(), inStepWant(), []string{"old"}, nil, nil},
		{"a key of ours someone added", inStepBase(withLabel(keys.Prefix+"x", "1"), withAnnotation(keys.Prefix+"y", "2")), inStepBase(), inStepWant(), nil, []string{keys.Prefix + "x"}, []string{keys.Prefix + "y"}},
		{"a label the SecretSync no longer sets", inStepBase(withLabel("team", "a")), inStepBase(recorded("labels=team")), inStepWant(), nil, []string{"team"}, nil},
		{"a tenant's own label that the SecretSync never set stays", inStepBase(withLabel("team", "a")), inStepBase(), inStepWant(), nil, nil, nil},
		{"a label the SecretSync still sets stays", inStepBase(withLabel("team", "a"), recorded("labels=team")), inStepBase(recorded("labels=team")), inStepWant(withLabel("team", "a"), recorded("labels=team")), nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, l, a := Leftovers(tc.cur, tc.before, tc.want)
			if !slices.Equal(d, tc.data) || !slices.Equal(l, tc.labels) || !slices.Equal(a, tc.annots) {
				t.Errorf("Leftovers() = %v %v %v, want %v %v %v", d, l, a, tc.data, tc.labels, tc.annots)
			}
		})
	}
}
