package secretsync

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

// TestOrphanedCopiesFollowTheirReturningSource is the Orphan case of issue 34: a source deleted
// and created again (a certificate re-issued by delete + create) under deletionPolicy Orphan. The
// copies are kept while it is gone, and follow it when it returns, except one a tenant changed
// meanwhile: that one is left as it is and reported Conflict.
func TestOrphanedCopiesFollowTheirReturningSource(t *testing.T) {
	const c = "orphanret"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := createSecret(t, makeSecret(src, "creds"))
	createSync(t, makeSync(c, src, c, sourceName("creds"), policy(v1alpha1.DeletionPolicyOrphan)))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyOrphan)
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyOrphan)
	waitReady(t, c, 2)

	if err := k8s.Delete(ctx, source); err != nil {
		t.Fatal(err)
	}
	orphanedIn(t, a, source, c)
	orphanedIn(t, b, source, c)
	waitReason(t, c, copyplan.ReasonSourceNotFound)

	// A tenant takes the copy in b for its own meanwhile.
	updateSecret(t, b, "creds", func(s *corev1.Secret) { s.Data["token"] = []byte("tenants-own") })

	reissued := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"token": []byte("re-issued")})))
	copyIn(t, a, reissued, c, v1alpha1.DeletionPolicyOrphan)
	// The apply brings the data, a merge patch then drops the mark an earlier Update entry holds:
	// a reader may see the copy between the two.
	eventually(t, "the copy that follows its source loses its orphan mark", func() error {
		if s := getSecret(t, a, "creds"); s == nil || s.Annotations[keys.AnnotationOrphaned] != "" {
			return fmt.Errorf("still marked: %v", s)
		}
		return nil
	})
	ss := waitReason(t, c, copyplan.ReasonConflict)
	if st := ss.Status; st.Conflicts != 1 || len(st.Failures) != 1 || st.Failures[0].Namespace != b || !strings.Contains(st.Failures[0].Message, "changed") {
		t.Errorf("status = %+v, want the copy in %s reported changed since its source went away", st, b)
	}
	quiet(t)
	if s := getSecret(t, b, "creds"); s == nil || string(s.Data["token"]) != "tenants-own" {
		t.Errorf("the tenant's changed copy was written: %v", s)
	}
}
