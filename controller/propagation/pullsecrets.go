package propagation

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
		if drop {
			changed = true
		}
		return drop
	})
	for n := range ours {
		if known[n] && !want[n] {
			delete(ours, n)
			changed = true
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !listed[n] {
			out.ImagePullSecrets = append(out.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
			ours[n] = true
			changed = true
		}
	}
	if !changed {
		return sa, false
	}
	list := make([]string, 0, len(ours))
	for n := range ours {
		list = append(list, n)
	}
	sort.Strings(list)
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
