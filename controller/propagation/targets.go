package propagation

import (
	"path"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Targets returns the sorted names of the namespaces that get copies: those the selector matches
// (nil matches all) and, when include is not empty, whose name matches one of its patterns, minus
// those whose name matches a pattern of exclude and the source namespace, minus namespaces being
// deleted (the API refuses new objects in them). Patterns are namespace names or globs in
// path.Match syntax limited by the CRD to letters, digits, '-', '*' and '?' (kube-*, *-system).
func Targets(namespaces []*corev1.Namespace, selector labels.Selector, include, exclude []string, sourceNamespace string) []string {
	var out []string
	for _, ns := range namespaces {
		if ns.Name == sourceNamespace || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
			continue
		}
		if MatchesAny(exclude, ns.Name) || (len(include) > 0 && !MatchesAny(include, ns.Name)) {
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

// MatchesAny reports whether name is one of patterns or matches one of them as a glob. A
// malformed pattern (the CRD refuses them) matches only itself.
func MatchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// RootCAConfigMap is the ConfigMap kube-controller-manager publishes into every namespace. A
// selector never picks it as a source: every target already holds its own, so each copy would
// be a conflict.
const RootCAConfigMap = "kube-root-ca.crt"

// SourceMatches reports whether a Secret of the source namespace (or a ConfigMap's envelope) is a
// source: it has the given name (or the selector matches its labels) and, when typ is set, that
// type.
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
	if s.Type == TypeConfigMap && s.Name == RootCAConfigMap {
		return false
	}
	return selector != nil && selector.Matches(labels.Set(s.Labels))
}
