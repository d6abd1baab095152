package propagation

import (
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// PullSecrets returns sa with its imagePullSecrets brought in line for one SecretSync, and
// whether anything changed. want are the copy names that should be listed; known are all names
// this SecretSync manages in the namespace (wanted or being removed). An entry is removed only
// when we added it (it is in keys.AnnotationPullSecrets) and it is known but no longer wanted; an
// entry someone else added is never removed, and is not claimed as ours either.
func PullSecrets(sa *corev1.ServiceAccount, want, known map[string]bool) (*corev1.ServiceAccount, bool) {
	ours := map[string]bool{}
	for _, n := range strings.Split(sa.Annotations[keys.AnnotationPullSecrets], ",") {
		if n != "" {
			ours[n] = true
		}
	}
	listed := map[string]bool{}
	for _, r := range sa.ImagePullSecrets {
		listed[r.Name] = true
	}
	out := sa.DeepCopy()
	changed := false
	// Remove ours that are known to this SecretSync and no longer wanted.
	out.ImagePullSecrets = slices.DeleteFunc(out.ImagePullSecrets, func(r corev1.LocalObjectReference) bool {
		// ours is updated by the loop below, after every listing of the name (the list is
		// atomic and may hold a name twice) has been removed.
		drop := ours[r.Name] && known[r.Name] && !want[r.Name]
		changed = changed || drop
		return drop
	})
	for n := range ours {
		if known[n] && !want[n] {
			delete(ours, n)
			changed = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if !listed[n] {
			out.ImagePullSecrets = append(out.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
			ours[n] = true
			changed = true
		}
	}
	if !changed {
		return sa, false
	}
	list := slices.Sorted(maps.Keys(ours))
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	if len(list) == 0 {
		delete(out.Annotations, keys.AnnotationPullSecrets)
	} else {
		out.Annotations[keys.AnnotationPullSecrets] = strings.Join(list, ",")
	}
	return out, true
}

// PullSecretNames is what the imagePullSecrets of a SecretSync's ServiceAccounts should say, per
// namespace: want, the copies to list (Docker config copies that are live and that the plan
// neither removes nor reports in conflict), and known, every copy the SecretSync manages there
// (wanted or owned), the only names an entry of ours may be removed for. A name whose copy is
// held by another (a conflict) is not known: the entry belongs to whoever holds the copy, so
// that two SecretSyncs wanting one copy name never remove each other's entry. notDocker names the
// copies that cannot be image pull secrets (not kubernetes.io/dockerconfigjson: the type comes
// from the source, so it is known before the copy exists); it is set only when forServiceAccounts
// names any. It is pure: the reconciler lists the ServiceAccounts and calls PullSecrets on each.
func PullSecretNames(plan Plan, want []*corev1.Secret, live Lookup, owned []*corev1.Secret, forServiceAccounts bool) (wanted, known map[string]map[string]bool, notDocker []string) {
	wanted, known = map[string]map[string]bool{}, map[string]map[string]bool{}
	add := func(m map[string]map[string]bool, ns, name string) {
		if m[ns] == nil {
			m[ns] = map[string]bool{}
		}
		m[ns][name] = true
	}
	// A copy the plan deletes, releases or reports in conflict is not to be listed.
	blocked, held := map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	for _, a := range plan.Actions {
		if a.Op != OpCreate && a.Op != OpUpdate && a.Op != OpReplace {
			blocked[a.Key] = true
		}
		if a.Op == OpConflict {
			held[a.Key] = true
		}
	}
	seenNotDocker := map[string]bool{}
	for _, w := range want {
		key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
		if !held[key] {
			add(known, w.Namespace, w.Name)
		}
		if !forServiceAccounts {
			continue
		}
		if w.Type != corev1.SecretTypeDockerConfigJson {
			if !seenNotDocker[w.Name] {
				seenNotDocker[w.Name] = true
				notDocker = append(notDocker, w.Name)
			}
			continue
		}
		// A target held by a Secret we do not manage is not live for us (live is nil).
		if !blocked[key] && live(key) != nil {
			add(wanted, w.Namespace, w.Name)
		}
	}
	for _, o := range owned {
		add(known, o.Namespace, o.Name)
	}
	sort.Strings(notDocker)
	return wanted, known, notDocker
}

// PullSecretAccounts says which ServiceAccounts of a target namespace list a SecretSync's copies
// (spec.imagePullSecretFor): the ones named, or every one when the list is ["*"]. The zero value
// selects none.
type PullSecretAccounts struct {
	all bool
	// store: configuration; paid by the admin's spec.imagePullSecretFor (bounded by the CRD).
	names map[string]bool
}

// AccountsFor reads spec.imagePullSecretFor. "*" selects every ServiceAccount (admission lets
// it stand only alone; here it wins over names listed beside it).
func AccountsFor(names []string) PullSecretAccounts {
	a := PullSecretAccounts{names: make(map[string]bool, len(names))}
	for _, n := range names {
		if n == "*" {
			a.all = true
		}
		a.names[n] = true
	}
	return a
}

// Any reports whether any ServiceAccount can be selected.
func (a PullSecretAccounts) Any() bool { return a.all || len(a.names) > 0 }

// Selects reports whether the ServiceAccount named name lists the copies.
func (a PullSecretAccounts) Selects(name string) bool { return a.all || a.names[name] }

// PerNamespace splits items, in their order, into those to handle now, at most limit of each
// namespace, and the namespaces that have more left for a later turn (sorted). A limit of zero
// or less takes every item now. It is what keeps one pass from spending itself on one
// namespace's thousands of ServiceAccounts: the rest of that namespace waits for its own pass,
// which takes its turn with the other namespaces'.
func PerNamespace[T any](items []T, namespace func(T) string, limit int) (now []T, later []string) {
	if limit <= 0 {
		return items, nil
	}
	taken := map[string]int{}
	left := map[string]bool{}
	for _, it := range items {
		ns := namespace(it)
		if taken[ns] >= limit {
			left[ns] = true
			continue
		}
		taken[ns]++
		now = append(now, it)
	}
	return now, slices.Sorted(maps.Keys(left))
}
