package propagation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Compute is ComputeFor the copies of the SecretSync named secretSync, proven by their label.
func Compute(secretSync string, want []*corev1.Secret, live Lookup, owned []*corev1.Secret, policy string) Plan {
	return ComputeFor(SecretSyncOwner(secretSync), want, live, owned, policy)
}

// liveLookup is a Lookup over the given Secrets, as the reconciler's cache of labelled Secrets.
func liveLookup(t *testing.T, secrets []*corev1.Secret) Lookup {
	t.Helper()
	m := make(map[types.NamespacedName]*corev1.Secret, len(secrets))
	for _, s := range secrets {
		k := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
		if _, dup := m[k]; dup {
			t.Fatalf("test set-up: two live Secrets %s", k)
		}
		m[k] = s
	}
	return func(k types.NamespacedName) *corev1.Secret { return m[k] }
}

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// wantIn is the desired copy of srcNS/name in namespace, with the usual data.
func wantIn(namespace, name string, opts ...secretOption) *corev1.Secret {
	return ourCopy(namespace, name, append([]secretOption{withData("user", "admin")}, opts...)...)
}

// liveIn is that copy as stored, with server fields, then opts.
func liveIn(namespace, name string, opts ...secretOption) *corev1.Secret {
	base := []secretOption{withServerFields("uid-"+namespace+"-"+name, "77"), withData("user", "admin")}
	return ourCopy(namespace, name, append(base, opts...)...)
}

// policyOf is a case's policy: "as-recorded" is PolicyAsRecorded, else as a spec gives it.
func policyOf(p string) string {
	if p == "as-recorded" {
		return PolicyAsRecorded
	}
	return DeletionPolicy(p)
}

func TestCompute(t *testing.T) {
	cases := []struct {
		name   string
		want   []*corev1.Secret
		live   []*corev1.Secret
		owned  []*corev1.Secret
		policy string
		plan   Plan
	}{
		{
			name: "nothing wanted and nothing owned plans nothing",
			plan: Plan{},
		},
		{
			name: "a wanted copy that does not exist is created",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{Op: OpCreate, Key: key("team-a", credsName), Want: wantIn("team-a", credsName)}},
			},
		},
		{
			name:  "a copy in step needs no action and is counted in step",
			want:  []*corev1.Secret{wantIn("team-a", credsName)},
			live:  []*corev1.Secret{liveIn("team-a", credsName)},
			owned: []*corev1.Secret{liveIn("team-a", credsName)},
			plan:  Plan{Desired: 1, InStep: 1},
		},
		{
			name: "a copy in step with labels and annotations others added needs no action",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			live: []*corev1.Secret{liveIn("team-a", credsName,
				withLabel("team", "a"), withAnnotation("reloader.stakater.com/match", "true"))},
			plan: Plan{Desired: 1, InStep: 1},
		},
		{
			name: "an immutable copy in step needs no action",
			want: []*corev1.Secret{wantIn("team-a", credsName, withImmutable(true))},
			live: []*corev1.Secret{liveIn("team-a", credsName, withImmutable(true))},
			plan: Plan{Desired: 1, InStep: 1},
		},
		{
			name: "a copy with changed data is updated with the merged object, keeping foreign metadata and its resourceVersion",
			want: []*corev1.Secret{wantIn("team-a", credsName, withData("user", "root"))},
			live: []*corev1.Secret{liveIn("team-a", credsName,
				withLabel("team", "a"), withAnnotation("reloader.stakater.com/match", "true"))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:  OpUpdate,
					Key: key("team-a", credsName),
					Want: liveIn("team-a", credsName, withData("user", "root"),
						withLabel("team", "a"), withAnnotation("reloader.stakater.com/match", "true")),
					Current: liveIn("team-a", credsName,
						withLabel("team", "a"), withAnnotation("reloader.stakater.com/match", "true")),
				}},
			},
		},
		{
			name: "a copy whose source annotation someone removed is updated to restore it",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			live: []*corev1.Secret{liveIn("team-a", credsName, withoutAnnotation(keys.AnnotationSource), withAnnotation("note", "x"))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpUpdate,
					Key:     key("team-a", credsName),
					Want:    liveIn("team-a", credsName, withAnnotation("note", "x")),
					Current: liveIn("team-a", credsName, withoutAnnotation(keys.AnnotationSource), withAnnotation("note", "x")),
				}},
			},
		},
		{
			name: "a wanted copy being deleted and held by a finalizer is held: neither deleted again nor written",
			want: []*corev1.Secret{wantIn("team-a", credsName, withData("user", "root"))},
			live: []*corev1.Secret{liveIn("team-a", credsName, withImmutable(true), beingDeleted())},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op: OpHeld, Key: key("team-a", credsName),
					Current: liveIn("team-a", credsName, withImmutable(true), beingDeleted()),
					Message: "Secret team-a/registry-creds, this SecretSync's copy, is being deleted and held there (a finalizer keeps it); nothing is written to it, and the copy is created again once it is gone: remove the finalizer to end this",
				}},
			},
		},
		{
			name: "a wanted copy in step but being deleted is held, not counted in step",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			live: []*corev1.Secret{liveIn("team-a", credsName, beingDeleted())},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op: OpHeld, Key: key("team-a", credsName),
					Current: liveIn("team-a", credsName, beingDeleted()),
					Message: "Secret team-a/registry-creds, this SecretSync's copy, is being deleted and held there (a finalizer keeps it); nothing is written to it, and the copy is created again once it is gone: remove the finalizer to end this",
				}},
			},
		},
		{
			name: "another SecretSync's copy being deleted is still a conflict, not held",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			live: []*corev1.Secret{liveIn("team-a", credsName, withLabel(keys.LabelSecretSync, "other"), beingDeleted())},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op: OpConflict, Key: key("team-a", credsName),
					Current: liveIn("team-a", credsName, withLabel(keys.LabelSecretSync, "other"), beingDeleted()),
					Message: `Secret team-a/registry-creds is managed by SecretSync "other"`,
				}},
			},
		},
		{
			name: "a mutable copy of a source made immutable is updated, not replaced",
			want: []*corev1.Secret{wantIn("team-a", credsName, withImmutable(true))},
			live: []*corev1.Secret{liveIn("team-a", credsName)},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpUpdate,
					Key:     key("team-a", credsName),
					Want:    liveIn("team-a", credsName, withImmutable(true)),
					Current: liveIn("team-a", credsName),
				}},
			},
		},
		{
			name: "a copy whose deletion policy changed is updated",
			want: []*corev1.Secret{wantIn("team-a", credsName, withAnnotation(keys.AnnotationDeletionPolicy, "Orphan"))},
			live: []*corev1.Secret{liveIn("team-a", credsName, withAnnotation(keys.AnnotationDeletionPolicy, "Delete"))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpUpdate,
					Key:     key("team-a", credsName),
					Want:    liveIn("team-a", credsName, withAnnotation(keys.AnnotationDeletionPolicy, "Orphan")),
					Current: liveIn("team-a", credsName, withAnnotation(keys.AnnotationDeletionPolicy, "Delete")),
				}},
			},
		},
		{
			// Switching a SecretSync's deletionPolicy must not delete and re-create every
			// immutable copy: the API accepts metadata changes on an immutable Secret, so an
			// update that keeps data and immutable as they are is enough.
			name: "an immutable copy whose only change is its deletion policy is updated, not replaced",
			want: []*corev1.Secret{wantIn("team-a", credsName, withImmutable(true), withAnnotation(keys.AnnotationDeletionPolicy, "Orphan"))},
			live: []*corev1.Secret{liveIn("team-a", credsName, withImmutable(true), withAnnotation(keys.AnnotationDeletionPolicy, "Delete"), withLabel("team", "a"))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpUpdate,
					Key:     key("team-a", credsName),
					Want:    liveIn("team-a", credsName, withImmutable(true), withAnnotation(keys.AnnotationDeletionPolicy, "Orphan"), withLabel("team", "a")),
					Current: liveIn("team-a", credsName, withImmutable(true), withAnnotation(keys.AnnotationDeletionPolicy, "Delete"), withLabel("team", "a")),
				}},
			},
		},
		{
			name: "a copy whose type changed is replaced with the desired copy",
			want: []*corev1.Secret{wantIn("team-a", credsName, withType(corev1.SecretTypeDockerConfigJson))},
			live: []*corev1.Secret{liveIn("team-a", credsName, withLabel("team", "a"))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpReplace,
					Key:     key("team-a", credsName),
					Want:    wantIn("team-a", credsName, withType(corev1.SecretTypeDockerConfigJson)),
					Current: liveIn("team-a", credsName, withLabel("team", "a")),
				}},
			},
		},
		{
			name: "an immutable copy with changed data is replaced with the desired copy",
			want: []*corev1.Secret{wantIn("team-a", credsName, withImmutable(true), withData("user", "root"))},
			live: []*corev1.Secret{liveIn("team-a", credsName, withImmutable(true))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpReplace,
					Key:     key("team-a", credsName),
					Want:    wantIn("team-a", credsName, withImmutable(true), withData("user", "root")),
					Current: liveIn("team-a", credsName, withImmutable(true)),
				}},
			},
		},
		{
			name: "an immutable copy of a source made mutable is replaced",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			live: []*corev1.Secret{liveIn("team-a", credsName, withImmutable(true))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpReplace,
					Key:     key("team-a", credsName),
					Want:    wantIn("team-a", credsName),
					Current: liveIn("team-a", credsName, withImmutable(true)),
				}},
			},
		},
		{
			name: "a live copy labelled with another SecretSync is a conflict naming that SecretSync",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			live: []*corev1.Secret{liveIn("team-a", credsName, withLabel(keys.LabelSecretSync, "team-mirror"), withData("user", "other"))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpConflict,
					Key:     key("team-a", credsName),
					Current: liveIn("team-a", credsName, withLabel(keys.LabelSecretSync, "team-mirror"), withData("user", "other")),
					Message: `Secret team-a/registry-creds is managed by SecretSync "team-mirror"`,
				}},
			},
		},
		{
			name: "a live copy of another SecretSync is a conflict even when its contents equal ours",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			live: []*corev1.Secret{liveIn("team-a", credsName, withLabel(keys.LabelSecretSync, "registry-2"))},
			plan: Plan{
				Desired: 1,
				Actions: []Action{{
					Op:      OpConflict,
					Key:     key("team-a", credsName),
					Current: liveIn("team-a", credsName, withLabel(keys.LabelSecretSync, "registry-2")),
					Message: `Secret team-a/registry-creds is managed by SecretSync "registry-2"`,
				}},
			},
		},
		{
			name:  "an owned copy no longer wanted is deleted",
			owned: []*corev1.Secret{liveIn("team-old", credsName)},
			plan: Plan{
				Actions: []Action{{Op: OpDelete, Key: key("team-old", credsName), Current: liveIn("team-old", credsName)}},
			},
		},
		{
			name:   "an owned copy no longer wanted is released when orphaning",
			owned:  []*corev1.Secret{liveIn("team-old", credsName)},
			policy: PolicyOrphan,
			plan: Plan{
				Actions: []Action{{Op: OpRelease, Key: key("team-old", credsName), Current: liveIn("team-old", credsName)}},
			},
		},
		{
			name:   "with the policy as recorded, a copy recorded Orphan is released and one recorded Delete is deleted",
			owned:  []*corev1.Secret{liveIn("team-old", credsName, withAnnotation(keys.AnnotationDeletionPolicy, PolicyOrphan)), liveIn("team-older", credsName, withAnnotation(keys.AnnotationDeletionPolicy, PolicyDelete))},
			policy: "as-recorded",
			plan: Plan{
				Actions: []Action{
					{Op: OpRelease, Key: key("team-old", credsName), Current: liveIn("team-old", credsName, withAnnotation(keys.AnnotationDeletionPolicy, PolicyOrphan))},
					{Op: OpDelete, Key: key("team-older", credsName), Current: liveIn("team-older", credsName, withAnnotation(keys.AnnotationDeletionPolicy, PolicyDelete))},
				},
			},
		},
		{
			name:   "with the policy as recorded, a copy that records none is deleted",
			owned:  []*corev1.Secret{liveIn("team-old", credsName)},
			policy: "as-recorded",
			plan: Plan{
				Actions: []Action{{Op: OpDelete, Key: key("team-old", credsName), Current: liveIn("team-old", credsName)}},
			},
		},
		{
			name:  "an owned copy already being deleted is left alone",
			owned: []*corev1.Secret{liveIn("team-old", credsName, beingDeleted())},
			plan:  Plan{},
		},
		{
			name:   "an owned copy already being deleted is left alone when orphaning too",
			owned:  []*corev1.Secret{liveIn("team-old", credsName, beingDeleted())},
			policy: PolicyOrphan,
			plan:   Plan{},
		},
		{
			name:  "an owned copy that is still wanted is neither deleted nor released",
			want:  []*corev1.Secret{wantIn("team-a", credsName)},
			live:  []*corev1.Secret{liveIn("team-a", credsName)},
			owned: []*corev1.Secret{liveIn("team-a", credsName)},
			plan:  Plan{Desired: 1, InStep: 1},
		},
		{
			name: "an owned copy of another source in a wanted namespace is deleted while the wanted one is kept",
			want: []*corev1.Secret{wantIn("team-a", credsName)},
			live: []*corev1.Secret{liveIn("team-a", credsName), liveIn("team-a", "old-creds")},
			owned: []*corev1.Secret{
				liveIn("team-a", credsName),
				liveIn("team-a", "old-creds"),
			},
			plan: Plan{
				Desired: 1, InStep: 1,
				Actions: []Action{{Op: OpDelete, Key: key("team-a", "old-creds"), Current: liveIn("team-a", "old-creds")}},
			},
		},
		{
			name: "actions are sorted by namespace, then name, whatever the order of the inputs",
			want: []*corev1.Secret{
				wantIn("team-b", "alpha"),                            // create
				wantIn("team-a", "zeta"),                             // create
				wantIn("team-a", "beta", withData("user", "root")),   // update
				wantIn("team-c", "alpha", withImmutable(true)),       // in step
				wantIn("team-a", "gamma", withType("example.io/x")),  // replace
				wantIn("team-b", "beta"),                             // conflict
				wantIn("team-d", "alpha", withData("user", "other")), // update
			},
			live: []*corev1.Secret{
				liveIn("team-a", "beta"),
				liveIn("team-c", "alpha", withImmutable(true)),
				liveIn("team-a", "gamma"),
				liveIn("team-b", "beta", withLabel(keys.LabelSecretSync, "other")),
				liveIn("team-d", "alpha"),
			},
			owned: []*corev1.Secret{
				liveIn("team-e", "alpha"), // delete
				liveIn("team-a", "beta"),
				liveIn("team-a", "alpha"), // delete
				liveIn("team-0", "zz"),    // delete
				liveIn("team-b", "aaa", beingDeleted()),
			},
			plan: Plan{
				Desired: 7,
				InStep:  1,
				Actions: []Action{
					{Op: OpDelete, Key: key("team-0", "zz"), Current: liveIn("team-0", "zz")},
					{Op: OpDelete, Key: key("team-a", "alpha"), Current: liveIn("team-a", "alpha")},
					{
						Op: OpUpdate, Key: key("team-a", "beta"),
						Want:    liveIn("team-a", "beta", withData("user", "root")),
						Current: liveIn("team-a", "beta"),
					},
					{
						Op: OpReplace, Key: key("team-a", "gamma"),
						Want:    wantIn("team-a", "gamma", withType("example.io/x")),
						Current: liveIn("team-a", "gamma"),
					},
					{Op: OpCreate, Key: key("team-a", "zeta"), Want: wantIn("team-a", "zeta")},
					{Op: OpCreate, Key: key("team-b", "alpha"), Want: wantIn("team-b", "alpha")},
					{
						Op: OpConflict, Key: key("team-b", "beta"),
						Current: liveIn("team-b", "beta", withLabel(keys.LabelSecretSync, "other")),
						Message: `Secret team-b/beta is managed by SecretSync "other"`,
					},
					{
						Op: OpUpdate, Key: key("team-d", "alpha"),
						Want:    liveIn("team-d", "alpha", withData("user", "other")),
						Current: liveIn("team-d", "alpha"),
					},
					{Op: OpDelete, Key: key("team-e", "alpha"), Current: liveIn("team-e", "alpha")},
				},
			},
		},
		{
			name: "Desired counts every wanted copy, creates and conflicts included; InStep only those in step",
			want: []*corev1.Secret{
				wantIn("team-a", credsName),
				wantIn("team-b", credsName),
				wantIn("team-c", credsName),
				wantIn("team-d", credsName),
			},
			live: []*corev1.Secret{
				liveIn("team-a", credsName),
				liveIn("team-b", credsName, withLabel(keys.LabelSecretSync, "other")),
				liveIn("team-c", credsName),
			},
			plan: Plan{
				Desired: 4,
				InStep:  2,
				Actions: []Action{
					{
						Op: OpConflict, Key: key("team-b", credsName),
						Current: liveIn("team-b", credsName, withLabel(keys.LabelSecretSync, "other")),
						Message: `Secret team-b/registry-creds is managed by SecretSync "other"`,
					},
					{Op: OpCreate, Key: key("team-d", credsName), Want: wantIn("team-d", credsName)},
				},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := struct{ want, live, owned []*corev1.Secret }{
				deepCopyAll(tc.want), deepCopyAll(tc.live), deepCopyAll(tc.owned),
			}
			got := Compute(syncName, tc.want, liveLookup(t, tc.live), tc.owned, policyOf(tc.policy))

			if got.Desired != tc.plan.Desired || got.InStep != tc.plan.InStep {
				t.Errorf("Compute() counts Desired=%d InStep=%d, want Desired=%d InStep=%d",
					got.Desired, got.InStep, tc.plan.Desired, tc.plan.InStep)
			}
			if len(got.Actions) != len(tc.plan.Actions) {
				t.Errorf("Compute() planned %d actions %v, want %d %v",
					len(got.Actions), summary(got.Actions), len(tc.plan.Actions), summary(tc.plan.Actions))
			} else {
				for i := range got.Actions {
					// An update carries the wanted copy itself (what a server-side apply sends):
					// checked here, so that the table lists only the merged object.
					if a := got.Actions[i]; a.Op == OpUpdate {
						if d := wantedAt(tc.want, a.Key); a.Desired != d {
							t.Errorf("action %s: Desired is not the wanted copy passed in", summary(got.Actions[i : i+1])[0])
						}
						got.Actions[i].Desired = nil
					}
					assertSemantic(t, "action "+summary(tc.plan.Actions[i : i+1])[0], got.Actions[i], tc.plan.Actions[i])
				}
			}
			assertExact(t, "want after Compute()", tc.want, before.want)
			assertExact(t, "live after Compute()", tc.live, before.live)
			assertExact(t, "owned after Compute()", tc.owned, before.owned)
		})
	}
}

// TestComputeCreateUsesTheDesiredObject checks that create and replace pass on the desired copy
// itself rather than anything derived from the live object.
func TestComputeCreateUsesTheDesiredObject(t *testing.T) {
	create := wantIn("team-a", credsName)
	replace := wantIn("team-b", credsName, withType(corev1.SecretTypeDockerConfigJson))
	p := Compute(syncName, []*corev1.Secret{create, replace},
		liveLookup(t, []*corev1.Secret{liveIn("team-b", credsName)}), nil, PolicyDelete)
	cases := []struct {
		name string
		i    int
		op   Op
		want *corev1.Secret
	}{
		{name: "a create carries the desired copy", i: 0, op: OpCreate, want: create},
		{name: "a replace carries the desired copy, with no server fields of the live one", i: 1, op: OpReplace, want: replace},
	}
	if len(p.Actions) != len(cases) {
		t.Fatalf("Compute() planned %v, want a create and a replace", summary(p.Actions))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := p.Actions[tc.i]
			if a.Op != tc.op {
				t.Fatalf("action %d is %s, want %s", tc.i, a.Op, tc.op)
			}
			if a.Want != tc.want {
				t.Errorf("action %d Want is not the desired object passed in", tc.i)
			}
			if a.Want.ResourceVersion != "" || a.Want.UID != "" {
				t.Errorf("action %d Want has server fields resourceVersion=%q uid=%q", tc.i, a.Want.ResourceVersion, a.Want.UID)
			}
		})
	}
}

// wantedAt is the wanted copy at key, or nil.
func wantedAt(want []*corev1.Secret, key types.NamespacedName) *corev1.Secret {
	for _, w := range want {
		if w.Namespace == key.Namespace && w.Name == key.Name {
			return w
		}
	}
	return nil
}

func deepCopyAll(in []*corev1.Secret) []*corev1.Secret {
	if in == nil {
		return nil
	}
	out := make([]*corev1.Secret, len(in))
	for i, s := range in {
		out[i] = s.DeepCopy()
	}
	return out
}

// summary is "op namespace/name" for each action, for failure messages.
func summary(actions []Action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = string(a.Op) + " " + a.Key.String()
	}
	return out
}

func TestComputeKeepsOrphanedCopiesForAReturningSource(t *testing.T) {
	owner := SecretSyncOwner(syncName)
	owner.SourceGone = func(s *corev1.Secret) bool { return s.Namespace == "team-a" }
	kept := liveIn("team-a", credsName)
	marked := liveIn("team-a", credsName, withAnnotation(keys.AnnotationOrphaned, ContentDigest(kept)))
	changed := liveIn("team-a", credsName, withData("user", "tenant"), withAnnotation(keys.AnnotationOrphaned, ContentDigest(kept)))
	// The manager's apply brought the copy to the returning source's data and the process died (or
	// the merge patch that removes the mark conflicted) before the mark was gone.
	halfway := liveIn("team-a", credsName, withData("user", "new"), withAnnotation(keys.AnnotationOrphaned, ContentDigest(kept)))
	for _, tc := range []struct {
		name   string
		want   []*corev1.Secret
		live   *corev1.Secret
		policy string
		op     Op
	}{
		{"under Orphan, a copy whose source is gone is kept, ours, and marked with its data's digest", nil, kept, PolicyOrphan, OpOrphan},
		{"a copy already marked is left as it is while the source is gone", nil, marked, PolicyOrphan, ""},
		{"under Delete, it is deleted", nil, kept, PolicyDelete, OpDelete},
		{"a copy whose namespace is no longer a target is released", nil, liveIn("team-b", credsName), PolicyOrphan, OpRelease},
		{"when the source returns, a marked copy nobody changed follows it (the update drops the mark)", []*corev1.Secret{wantIn("team-a", credsName, withData("user", "new"))}, marked, PolicyOrphan, OpUpdate},
		{"when the source returns, a marked copy someone changed is a conflict", []*corev1.Secret{wantIn("team-a", credsName, withData("user", "new"))}, changed, PolicyOrphan, OpConflict},
		{"the same, as the cache holds it", []*corev1.Secret{wantIn("team-a", credsName, withData("user", "new"))}, Bounded(changed), PolicyOrphan, OpConflict},
		{"a marked copy changed to exactly the returning source's content loses nothing: the update drops the mark", []*corev1.Secret{wantIn("team-a", credsName, withData("user", "new"))}, halfway, PolicyOrphan, OpUpdate},
		{"the halfway copy as the cache holds it", []*corev1.Secret{wantIn("team-a", credsName, withData("user", "new"))}, Bounded(halfway), PolicyOrphan, OpUpdate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ComputeFor(owner, tc.want, liveLookup(t, []*corev1.Secret{tc.live}), []*corev1.Secret{tc.live}, tc.policy)
			switch {
			case tc.op == "" && len(p.Actions) != 0:
				t.Fatalf("actions %v, want none", summary(p.Actions))
			case tc.op == "":
				return
			case len(p.Actions) != 1 || p.Actions[0].Op != tc.op:
				t.Fatalf("actions %v, want one %s", summary(p.Actions), tc.op)
			}
			a := p.Actions[0]
			switch tc.op {
			case OpOrphan:
				if got := a.Want.Annotations[keys.AnnotationOrphaned]; got != ContentDigest(tc.live) || got == "" {
					t.Errorf("mark %q, want the data's digest %q", got, ContentDigest(tc.live))
				}
			case OpUpdate:
				if _, ok := a.Want.Annotations[keys.AnnotationOrphaned]; ok {
					t.Errorf("the update keeps the mark: %v", a.Want.Annotations)
				}
			}
		})
	}
}
