package secretsync

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

// A manager limited to a list of namespaces (--watch-namespaces; the chart's rbac.scope=namespaced)
// holds Roles in those namespaces and nothing on Namespace objects: a Role cannot grant a
// cluster-scoped kind. So in that mode the controller neither lists nor watches Namespaces; it
// takes the list as the namespaces that exist, each known by its name only. What follows decides,
// without the API, what a SecretSync may reach there.

// nameLabel is the label the API server sets on every Namespace to its name (since 1.22): the one
// label a namespaceSelector can be matched with when the Namespace cannot be read.
const nameLabel = corev1.LabelMetadataName

// maxNamedNamespaces bounds the namespaces a condition message names.
const maxNamedNamespaces = 5

// managedNamespaces are the listed namespaces as Namespace objects that carry their name label
// only (namespaced mode); only, when set, keeps that one (none when it is not listed).
func managedNamespaces(managed []string, only string) []*corev1.Namespace {
	out := make([]*corev1.Namespace, 0, len(managed))
	for _, n := range managed {
		if only != "" && n != only {
			continue
		}
		out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{nameLabel: n}}})
	}
	return out
}

// unmanagedTargets lists, sorted, the namespaces spec.target.includeNamespaces names literally
// (not a glob) that are not among managed: copies the user asked for by name that the manager
// cannot write. Globs and selectors cannot name a namespace the manager cannot see, so they are
// matched against managed only. The source namespace never gets a copy and is left out.
func unmanagedTargets(ss *v1alpha1.SecretSync, managed []string) []string {
	var out []string
	for _, p := range ss.Spec.Target.IncludeNamespaces {
		if strings.ContainsAny(p, "*?") || p == ss.Spec.Source.Namespace || slices.Contains(managed, p) || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// unknownSelectorKeys lists, sorted, the label keys a namespaceSelector needs besides the name
// label: in namespaced mode the manager cannot read them, so the selector cannot be decided.
func unknownSelectorKeys(sel labels.Selector) []string {
	if sel == nil {
		return nil
	}
	reqs, _ := sel.Requirements()
	var out []string
	for _, r := range reqs {
		if k := r.Key(); k != nameLabel {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// namespacedBlocker is what stops a SecretSync in namespaced mode before anything is read: a
// source namespace outside managed (its Secrets cannot be read), or a namespaceSelector on
// labels the manager cannot read (the targets cannot be decided). Nil when neither. Nothing is
// copied or removed while it holds, as for a missing source namespace.
func namespacedBlocker(ss *v1alpha1.SecretSync, sel labels.Selector, managed []string) *blocker {
	if src := ss.Spec.Source.Namespace; !slices.Contains(managed, src) {
		return &blocker{copyplan.ReasonNamespaceNotManaged, fmt.Sprintf("source namespace %q is not among the namespaces the manager works in (%s; chart: rbac.namespaces): nothing is copied or removed until it is listed or the SecretSync names another source", src, namedList(managed))}
	}
	if keys := unknownSelectorKeys(sel); len(keys) > 0 {
		return &blocker{copyplan.ReasonNamespaceSelectorUnsupported, fmt.Sprintf("spec.target.namespaceSelector needs the label %s, but a manager limited to namespaces (chart: rbac.scope=namespaced) cannot read Namespace labels: select by %s or spec.target.includeNamespaces/excludeNamespaces instead; nothing is copied or removed until then", namedList(keys), nameLabel)}
	}
	return nil
}

// unmanagedMessage is the Ready message of a SecretSync that names target namespaces outside
// the list: the others get their copies.
func unmanagedMessage(unmanaged []string) string {
	return fmt.Sprintf("spec.target.includeNamespaces names %d namespaces the manager does not work in (chart: rbac.namespaces): %s; no copy goes there, the listed namespaces get theirs (see status.syncedRatio)", len(unmanaged), namedList(unmanaged))
}

// namedList is names joined, at most maxNamedNamespaces of them, with how many more.
func namedList(names []string) string {
	if len(names) <= maxNamedNamespaces {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamedNamespaces], ", "), len(names)-maxNamedNamespaces)
}
