package at

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// unstructuredAt builds an At with a schedule string exactly as a user writes it (a typed At
// would re-format the time in UTC).
type unstructuredAt struct{ ns, name, schedule string }

func (u *unstructuredAt) obj() *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": u.ns, "name": u.name},
		"spec":     map[string]any{"schedule": u.schedule, "command": "true"},
	}}
	o.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("At"))
	return o
}
