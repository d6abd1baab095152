package propagation

import (
	"path"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Targets returns the sorted names of the namespaces that get copies: those Exclude leaves in.
func Targets(namespaces []*corev1.Namespace, selector labels.Selector, include, exclude []string, sourceNamespace string) []string {
	var out []string
	for _, ns := range namespaces {
		if Exclude(ns, selector, include, exclude, sourceNamespace) == Included {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Exclusion is why a namespace gets no copies, or Included.
type Exclusion string

// The exclusions, in the order Exclude checks them.
const (
	Included Exclusion = ""
	// ExcludedSource: the source namespace never gets copies.
	ExcludedSource Exclusion = "Source"
	// ExcludedTerminating: the namespace is being deleted (the API refuses new objects in it).
	ExcludedTerminating Exclusion = "Terminating"
	// ExcludedByName: a pattern of exclude matches its name.
	ExcludedByName Exclusion = "ExcludedByName"
	// ExcludedNotIncluded: include is not empty and none of its patterns matches the name.
	ExcludedNotIncluded Exclusion = "NotIncluded"
	// ExcludedBySelector: the selector does not match its labels.
	ExcludedBySelector Exclusion = "NotSelected"
)

// Exclude decides whether ns gets copies: it does when the selector matches it (nil matches all)
// and, when include is not empty, its name matches one of include's patterns; never when its name
// matches a pattern of exclude, when it is the source namespace, or when it is being deleted.
// Patterns are namespace names or globs in path.Match syntax limited by the CRD to letters,
// digits, '-', '*' and '?' (kube-*, *-system).
func Exclude(ns *corev1.Namespace, selector labels.Selector, include, exclude []string, sourceNamespace string) Exclusion {
	switch {
	case ns.Name == sourceNamespace:
		return ExcludedSource
	case ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating:
		return ExcludedTerminating
	case MatchesAny(exclude, ns.Name):
		return ExcludedByName
	case len(include) > 0 && !MatchesAny(include, ns.Name):
		return ExcludedNotIncluded
	case selector != nil && !selector.Matches(labels.Set(ns.Labels)):
		return ExcludedBySelector
	}
	return Included
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
