package propagation

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Targets returns the sorted names of the namespaces that get copies: those the selector matches
// (nil matches all), minus the excluded ones and the source namespace, minus namespaces being
// deleted (the API refuses new objects in them).
func Targets(namespaces []*corev1.Namespace, selector labels.Selector, exclude []string, sourceNamespace string) []string {
	skip := make(map[string]bool, len(exclude)+1)
	for _, n := range exclude {
		skip[n] = true
	}
	skip[sourceNamespace] = true
	var out []string
	for _, ns := range namespaces {
		if skip[ns.Name] || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
			continue
		}
		if selector != nil && !selector.Matches(labels.Set(ns.Labels)) {
			continue
		}
		out = append(out, ns.Name)
	}
	sort.Strings(out)
	return out
}

// SourceMatches reports whether a Secret of the source namespace is a source: it has the given
// name (or the selector matches its labels) and, when typ is set, that type.
func SourceMatches(s *corev1.Secret, name string, selector labels.Selector, typ corev1.SecretType) bool {
	if s.DeletionTimestamp != nil {
		return false
	}
	if typ != "" && s.Type != typ {
		return false
	}
	if name != "" {
		return s.Name == name
	}
	return selector != nil && selector.Matches(labels.Set(s.Labels))
}
