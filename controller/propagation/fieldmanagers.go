package propagation

import (
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The copies are written by server-side apply under one field manager, so that the API server
// knows which fields are the manager's: a key the source drops goes from the copy with the next
// apply, and the labels and annotations others add stay theirs. Who else holds a field of a copy
// (a tenant's kubectl edit of its data) is read from the copy's managedFields when the cache
// takes it in (Bounded), so that the writer can say so when it takes the field back.

const (
	// FieldManager is the field manager of every write of a copy (SecretSync and CopyRequest) and
	// of the manager's imagePullSecrets entries on ServiceAccounts.
	FieldManager = "platform-operators-secretsync"
	// LegacyFieldManager is the field manager the copies' writes had before they were applied:
	// the manager's user agent ("platform-operators/<version>"), which the API server takes when a
	// request names none. Its fields on a copy are the manager's own (see the writer's upgrade).
	LegacyFieldManager = "platform-operators"
	// fieldManagersMark records, on a cache's bounded form, the other field managers that hold a
	// field of the copy that the manager writes (ForeignFieldManagers). The ':' makes it an
	// invalid key: no object from the API carries it.
	fieldManagersMark = "ops.platform-operators.io/cached:field-managers"
	// maxForeignManagers bounds the names kept (each is at most 128 bytes, by the API's validation).
	maxForeignManagers = 4
)

// ForeignFieldManagers returns the field managers, other than ours, that hold a field of a copy
// the manager writes: a key of its data or binaryData, its type, its immutability, or a label or
// annotation key of ours. Sorted, at most maxForeignManagers. A managedFields entry that does not
// decode is skipped: it tells nothing the API server will not tell the apply.
func ForeignFieldManagers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		if e.Manager == FieldManager || e.Manager == LegacyFieldManager || e.FieldsV1 == nil || slices.Contains(out, e.Manager) {
			continue
		}
		if holdsOurFields(e.FieldsV1.GetRawBytes()) {
			out = append(out, e.Manager)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), maxForeignManagers)]
}

// holdsOurFields reports whether a FieldsV1 set names a field of a copy the manager writes.
func holdsOurFields(raw []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return false
	}
	for _, f := range []string{"f:data", "f:binaryData", "f:type", "f:immutable"} {
		if _, ok := top[f]; ok {
			return true
		}
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(top["f:metadata"], &meta) != nil {
		return false
	}
	for _, f := range []string{"f:labels", "f:annotations"} {
		var ks map[string]json.RawMessage
		if json.Unmarshal(meta[f], &ks) != nil {
			continue
		}
		for k := range ks {
			if key, ok := strings.CutPrefix(k, "f:"); ok && ours(key) {
				return true
			}
		}
	}
	return false
}

// CachedForeignFieldManagers returns the other field managers a cache's bounded form of cur
// recorded as holding a field the manager writes (none for an object not from a cache).
func CachedForeignFieldManagers(cur *corev1.Secret) []string {
	v := cur.Annotations[fieldManagersMark]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}
