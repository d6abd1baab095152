package propagation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

func TestDesired(t *testing.T) {
	dockerJSON := []byte(`{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}`)
	// Not valid UTF-8: a lone continuation byte, a truncated sequence, 0xff and 0xfe, and NULs.
	binary := []byte{0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x00, 0xe2, 0x82}

	cases := []struct {
		name      string
		src       *corev1.Secret
		namespace string
		sync      string
		want      *corev1.Secret
	}{
		{
			name: "server fields, labels, annotations, owner references and finalizers of the source are not carried",
			src: secret(srcNS, credsName,
				withServerFields("0b0e5f0c-src", "4711"),
				withOwner("Vault", "creds", "6d7a-owner"),
				withLabel("team", "platform"),
				withAnnotation("kubectl.kubernetes.io/last-applied-configuration", `{"kind":"Secret"}`),
				withData("user", "admin", "pass", "s3cr3t"),
				func(s *corev1.Secret) {
					s.Finalizers = []string{"example.io/hold"}
					s.GenerateName = "registry-"
				},
			),
			namespace: "team-a",
			sync:      "registry",
			want: &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name:      credsName,
					Namespace: "team-a",
					Labels: map[string]string{
						"ops.platform-operators.io/secretsync": "registry",
						"app.kubernetes.io/managed-by":         "platform-operators",
					},
					Annotations: map[string]string{"ops.platform-operators.io/source": "infra/registry-creds"},
				},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cr3t")},
			},
		},
		{
			name: "a source that is itself a copy gets our keys set for this SecretSync, not merged",
			src: secret(srcNS, credsName,
				withLabel(keys.LabelSecretSync, "upstream"),
				withLabel(keys.LabelManagedBy, "Helm"),
				withAnnotation(keys.AnnotationSource, "vault/creds"),
				withAnnotation(keys.AnnotationDeletionPolicy, "Orphan"),
				withData("k", "v"),
			),
			namespace: "team-b",
			sync:      "mirror",
			want: &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name:        credsName,
					Namespace:   "team-b",
					Labels:      map[string]string{keys.LabelSecretSync: "mirror", keys.LabelManagedBy: keys.ManagedByValue},
					Annotations: map[string]string{keys.AnnotationSource: "infra/registry-creds"},
				},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"k": []byte("v")},
			},
		},
		{
			name:      "the type is copied",
			src:       secret(srcNS, credsName, withType(corev1.SecretTypeDockerConfigJson), withBytes(corev1.DockerConfigJsonKey, dockerJSON)),
			namespace: "team-a",
			sync:      syncName,
			want: ourCopy("team-a", credsName,
				withType(corev1.SecretTypeDockerConfigJson), withBytes(corev1.DockerConfigJsonKey, dockerJSON)),
		},
		{
			name:      "an immutable source gives an immutable copy",
			src:       secret(srcNS, credsName, withImmutable(true), withData("k", "v")),
			namespace: "team-a",
			sync:      syncName,
			want:      ourCopy("team-a", credsName, withImmutable(true), withData("k", "v")),
		},
		{
			name:      "an explicitly mutable source gives an explicitly mutable copy",
			src:       secret(srcNS, credsName, withImmutable(false)),
			namespace: "team-a",
			sync:      syncName,
			want:      ourCopy("team-a", credsName, withImmutable(false)),
		},
		{
			name:      "a source with immutable unset gives a copy with immutable unset",
			src:       secret(srcNS, credsName, withData("k", "v")),
			namespace: "team-a",
			sync:      syncName,
			want:      ourCopy("team-a", credsName, withData("k", "v")),
		},
		{
			name: "binary data is copied byte for byte, non-UTF-8 bytes, empty and nil values included",
			src: secret(srcNS, credsName,
				withBytes("bin", binary),
				withBytes("empty", []byte{}),
				withBytes("nil", nil),
				withBytes("utf8", []byte("héllo ✓")),
				withBytes("trailing-newline", []byte("token\n")),
			),
			namespace: "team-a",
			sync:      syncName,
			want: ourCopy("team-a", credsName,
				withBytes("bin", []byte{0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x00, 0xe2, 0x82}),
				withBytes("empty", []byte{}),
				withBytes("nil", nil),
				withBytes("utf8", []byte("héllo ✓")),
				withBytes("trailing-newline", []byte("token\n")),
			),
		},
		{
			name:      "a source without data gives a copy without data",
			src:       secret(srcNS, credsName),
			namespace: "team-a",
			sync:      syncName,
			want:      ourCopy("team-a", credsName),
		},
		{
			name:      "a source with an empty data map gives a copy with an empty data map",
			src:       secret(srcNS, credsName, withData()),
			namespace: "team-a",
			sync:      syncName,
			want:      ourCopy("team-a", credsName, withData()),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.src.DeepCopy()
			got := Desired(tc.src, tc.namespace, tc.sync)
			assertExact(t, "Desired()", got, tc.want)
			assertExact(t, "source after Desired()", tc.src, before)
			if got.Immutable != nil && got.Immutable == tc.src.Immutable {
				t.Errorf("Desired().Immutable is the source's pointer; want a copy")
			}
		})
	}
}

// TestDesiredDoesNotAliasTheSource changes the source after Desired and checks the copy, so a
// copy taken from an informer's cache cannot change under us (nor the cache under the copy).
// A desired copy has its own map, labels, annotations and immutable flag; its values share the
// source's bytes (read-only on both sides, see Desired).
func TestDesiredDoesNotAliasTheSource(t *testing.T) {
	source := func() *corev1.Secret {
		return secret(srcNS, credsName,
			withLabel("team", "platform"),
			withAnnotation("note", "x"),
			withImmutable(true),
			withBytes("user", []byte("admin")),
			withBytes("bin", []byte{0x00, 0xff, 0x80}),
		)
	}
	wantCopy := ourCopy("team-a", credsName,
		withImmutable(true),
		withBytes("user", []byte("admin")),
		withBytes("bin", []byte{0x00, 0xff, 0x80}),
	)

	cases := []struct {
		name   string
		mutate func(src *corev1.Secret)
	}{
		{
			name:   "adding a key to the source data leaves the copy unchanged",
			mutate: func(s *corev1.Secret) { s.Data["extra"] = []byte("new") },
		},
		{
			name:   "deleting a key from the source data leaves the copy unchanged",
			mutate: func(s *corev1.Secret) { delete(s.Data, "user") },
		},
		{
			name:   "flipping the source's immutable flag through its pointer leaves the copy unchanged",
			mutate: func(s *corev1.Secret) { *s.Immutable = false },
		},
		{
			name: "changing the source's labels and annotations leaves the copy unchanged",
			mutate: func(s *corev1.Secret) {
				s.Labels[keys.LabelSecretSync] = "other"
				s.Annotations[keys.AnnotationSource] = "elsewhere/x"
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := source()
			got := Desired(src, "team-a", syncName)
			tc.mutate(src)
			assertExact(t, "copy after changing the source", got, wantCopy)
		})
	}

	t.Run("changing the copy's map and immutable flag leaves the source unchanged", func(t *testing.T) {
		src := source()
		got := Desired(src, "team-a", syncName)
		got.Data["user"] = []byte("X")
		delete(got.Data, "bin")
		got.Data["new"] = []byte("y")
		*got.Immutable = false
		got.Labels["x"], got.Annotations["x"] = "y", "y"
		assertExact(t, "source after changing the copy", src, source())
	})

	t.Run("the values are the source's bytes, not clones", func(t *testing.T) {
		src := source()
		got := Desired(src, "team-a", syncName)
		if &got.Data["user"][0] != &src.Data["user"][0] {
			t.Errorf("the copy's value was cloned: a pass would allocate one clone per target namespace")
		}
	})
}

// inStepBase is a copy as stored by the API server, with the data of the usual source.
func inStepBase(opts ...secretOption) *corev1.Secret {
	base := []secretOption{withServerFields("c0ffee-copy", "900"), withData("user", "admin", "pass", "s3cr3t")}
	return ourCopy("team-a", credsName, append(base, opts...)...)
}

// inStepWant is what Desired returns for the usual source in team-a.
func inStepWant(opts ...secretOption) *corev1.Secret {
	return ourCopy("team-a", credsName, append([]secretOption{withData("user", "admin", "pass", "s3cr3t")}, opts...)...)
}

func TestInStepAndNeedsReplace(t *testing.T) {
	cases := []struct {
		name        string
		cur, want   *corev1.Secret
		inStep      bool
		needReplace bool
	}{
		{
			name:   "a copy equal to the desired one but for server fields is in step",
			cur:    inStepBase(),
			want:   inStepWant(),
			inStep: true,
		},
		{
			name: "labels and annotations others added keep a copy in step",
			cur: inStepBase(
				withLabel("team", "a"),
				withAnnotation("reloader.stakater.com/match", "true"),
				withAnnotation("kubectl.kubernetes.io/last-applied-configuration", "{}"),
				withOwner("App", "web", "abc"),
				func(s *corev1.Secret) { s.Finalizers = []string{"example.io/hold"} },
			),
			want:   inStepWant(),
			inStep: true,
		},
		{
			name:   "an offer label a tenant put on a copy puts it out of step (our keys on a copy are ours)",
			cur:    inStepBase(withLabel(keys.LabelOffer, "true"), withAnnotation(keys.AnnotationOfferNamespaces, "*")),
			want:   inStepWant(),
			inStep: false,
		},
		{
			name:   "any other key of ours a tenant put on a copy puts it out of step",
			cur:    inStepBase(withLabel("ops.platform-operators.io/other", "x")),
			want:   inStepWant(),
			inStep: false,
		},
		{
			name:   "a copy without the ownership proof the desired copy carries is out of step",
			cur:    inStepBase(),
			want:   inStepWant(withAnnotation(keys.AnnotationOwnership, "v1:proof")),
			inStep: false,
		},
		{
			name: "a value that changed puts the copy out of step",
			cur:  inStepBase(withData("user", "admin", "pass", "old")),
			want: inStepWant(),
		},
		{
			name: "a value differing only in a non-UTF-8 byte puts the copy out of step",
			cur:  inStepBase(withData(), withBytes("bin", []byte{0x00, 0xfe})),
			want: inStepWant(withData(), withBytes("bin", []byte{0x00, 0xff})),
		},
		{
			name: "a key the source no longer has puts the copy out of step",
			cur:  inStepBase(withData("user", "admin", "pass", "s3cr3t", "stale", "x")),
			want: inStepWant(),
		},
		{
			name: "a key the copy lacks puts the copy out of step",
			cur:  inStepBase(withData("user", "admin")),
			want: inStepWant(),
		},
		{
			name: "a key renamed with the same value puts the copy out of step",
			cur:  inStepBase(withData("user", "admin", "password", "s3cr3t")),
			want: inStepWant(),
		},
		{
			name:   "nil data on the copy and empty data wanted are the same",
			cur:    inStepBase(func(s *corev1.Secret) { s.Data = nil }),
			want:   inStepWant(withData()),
			inStep: true,
		},
		{
			name:   "empty data on the copy and nil data wanted are the same",
			cur:    inStepBase(withData()),
			want:   inStepWant(func(s *corev1.Secret) { s.Data = nil }),
			inStep: true,
		},
		{
			name:   "a nil value and an empty value are the same",
			cur:    inStepBase(withData(), withBytes("k", nil)),
			want:   inStepWant(withData(), withBytes("k", []byte{})),
			inStep: true,
		},
		{
			name: "an empty data map does not equal a map holding one empty value",
			cur:  inStepBase(withData()),
			want: inStepWant(withData(), withBytes("k", []byte{})),
		},
		{
			name:        "a changed type puts the copy out of step and needs a replace",
			cur:         inStepBase(),
			want:        inStepWant(withType(corev1.SecretTypeDockerConfigJson)),
			needReplace: true,
		},
		{
			name:        "an immutable copy the source made mutable is out of step and needs a replace",
			cur:         inStepBase(withImmutable(true)),
			want:        inStepWant(),
			needReplace: true,
		},
		{
			name:        "an immutable copy with changed data is out of step and needs a replace",
			cur:         inStepBase(withImmutable(true), withData("user", "admin", "pass", "old")),
			want:        inStepWant(withImmutable(true)),
			needReplace: true,
		},
		{
			name:   "an immutable copy equal to the desired one is in step",
			cur:    inStepBase(withImmutable(true)),
			want:   inStepWant(withImmutable(true)),
			inStep: true,
		},
		{
			// The API refuses changes to an immutable Secret's data and immutable field, not to
			// its metadata (ValidateSecretUpdate), so our keys can be set by an update.
			name: "an immutable copy whose only difference is our annotation can be updated in place",
			cur:  inStepBase(withImmutable(true), withAnnotation(keys.AnnotationDeletionPolicy, "Delete")),
			want: inStepWant(withImmutable(true), withAnnotation(keys.AnnotationDeletionPolicy, "Orphan")),
		},
		{
			name: "a mutable copy of a source made immutable is out of step but can be updated",
			cur:  inStepBase(),
			want: inStepWant(withImmutable(true)),
		},
		{
			name:   "immutable unset and immutable false are the same",
			cur:    inStepBase(withImmutable(false)),
			want:   inStepWant(),
			inStep: true,
		},
		{
			name:   "immutable false on the copy can be left as it is",
			cur:    inStepBase(),
			want:   inStepWant(withImmutable(false)),
			inStep: true,
		},
		{
			name: "our SecretSync label naming another SecretSync puts the copy out of step",
			cur:  inStepBase(withLabel(keys.LabelSecretSync, "other")),
			want: inStepWant(),
		},
		{
			name: "our SecretSync label removed puts the copy out of step",
			cur:  inStepBase(withoutLabel(keys.LabelSecretSync)),
			want: inStepWant(),
		},
		{
			name: "a managed-by label set to another value puts the copy out of step",
			cur:  inStepBase(withLabel(keys.LabelManagedBy, "Helm")),
			want: inStepWant(),
		},
		{
			name: "a managed-by label removed puts the copy out of step",
			cur:  inStepBase(withoutLabel(keys.LabelManagedBy)),
			want: inStepWant(),
		},
		{
			name: "a source annotation naming another source puts the copy out of step",
			cur:  inStepBase(withAnnotation(keys.AnnotationSource, "elsewhere/registry-creds")),
			want: inStepWant(),
		},
		{
			name: "a source annotation removed puts the copy out of step",
			cur:  inStepBase(withoutAnnotation(keys.AnnotationSource)),
			want: inStepWant(),
		},
		{
			name:   "a copy with the deletion policy wanted is in step",
			cur:    inStepBase(withAnnotation(keys.AnnotationDeletionPolicy, "Orphan")),
			want:   inStepWant(withAnnotation(keys.AnnotationDeletionPolicy, "Orphan")),
			inStep: true,
		},
		{
			name: "a deletion-policy annotation with another policy puts the copy out of step",
			cur:  inStepBase(withAnnotation(keys.AnnotationDeletionPolicy, "Delete")),
			want: inStepWant(withAnnotation(keys.AnnotationDeletionPolicy, "Orphan")),
		},
		{
			name: "a deletion-policy annotation removed puts the copy out of step",
			cur:  inStepBase(),
			want: inStepWant(withAnnotation(keys.AnnotationDeletionPolicy, "Delete")),
		},
		{
			name: "a deletion-policy annotation the desired copy does not carry puts the copy out of step",
			cur:  inStepBase(withAnnotation(keys.AnnotationDeletionPolicy, "Delete")),
			want: inStepWant(),
		},
		{
			name: "a copy with no labels or annotations at all is out of step",
			cur:  inStepBase(func(s *corev1.Secret) { s.Labels, s.Annotations = nil, nil }),
			want: inStepWant(),
		},
	}
	for _, tc := range cases {
		// The manager's cache holds copies in their bounded form (Bounded): every answer must be
		// the same for the copy as the cache holds it.
		cached := Bounded(tc.cur)
		for _, cur := range []struct {
			name string
			s    *corev1.Secret
		}{{"live", tc.cur}, {"cached", cached}} {
			t.Run(tc.name+"/"+cur.name, func(t *testing.T) {
				if got := InStep(cur.s, tc.want); got != tc.inStep {
					t.Errorf("InStep() = %v, want %v", got, tc.inStep)
				}
				// Compute asks NeedsReplace only about copies out of step.
				if tc.inStep {
					return
				}
				if got := NeedsReplace(cur.s, tc.want); got != tc.needReplace {
					t.Errorf("NeedsReplace() = %v, want %v", got, tc.needReplace)
				}
			})
		}
	}
}

func TestDataDigest(t *testing.T) {
	base := map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cr3t")}
	cases := []struct {
		name  string
		a, b  map[string][]byte
		equal bool
	}{
		{name: "the same data in another map is the same digest", a: base, b: map[string][]byte{"pass": []byte("s3cr3t"), "user": []byte("admin")}, equal: true},
		{name: "nil and empty data are the same (the API drops empty maps)", a: nil, b: map[string][]byte{}, equal: true},
		{name: "a changed value differs", a: base, b: map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cr3u")}},
		{name: "a renamed key differs", a: base, b: map[string][]byte{"user": []byte("admin"), "pwd": []byte("s3cr3t")}},
		{name: "a key added differs", a: base, b: map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cr3t"), "x": nil}},
		{name: "bytes moved from a key to its value differ", a: map[string][]byte{"ab": []byte("c")}, b: map[string][]byte{"a": []byte("bc")}},
		{name: "bytes moved between values of neighbouring keys differ", a: map[string][]byte{"a": []byte("x1"), "b": []byte("y")}, b: map[string][]byte{"a": []byte("x"), "b": []byte("1y")}},
		{name: "an empty value differs from no key", a: map[string][]byte{"a": {}}, b: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DataDigest(tc.a) == DataDigest(tc.b); got != tc.equal {
				t.Errorf("DataDigest(%q) == DataDigest(%q) is %v, want %v", tc.a, tc.b, got, tc.equal)
			}
		})
	}
}

// client-go may pass an object through a cache transform twice (its TransformFunc must be
// idempotent): a second Bounded must keep the digests of the data, not take those of no data.
func TestBoundedIsIdempotent(t *testing.T) {
	s := Bounded(inStepBase())
	once := s.DeepCopy()
	assertExact(t, "a Secret bounded twice", Bounded(s), once)
	if !InStep(Bounded(s), inStepWant()) {
		t.Errorf("a copy bounded twice is out of step with its own data")
	}

	cm := BoundedConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca"}, Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {2}}})
	cmOnce := cm.DeepCopy()
	assertExact(t, "a ConfigMap bounded twice", BoundedConfigMap(cm), cmOnce)
}

// A copy from the cache has no data: what Merged returns to be written has the wanted data whole,
// and the cache's records are not written.
func TestMergedFromACachedCopy(t *testing.T) {
	cur := Bounded(inStepBase(withData("user", "admin", "pass", "old"), withLabel("team", "a")))
	want := inStepWant(withData("user", "admin", "pass", "new"))
	got := Merged(cur, want)
	if !sameData(got.Data, want.Data) {
		t.Errorf("Merged() data = %q, want %q", got.Data, want.Data)
	}
	for _, k := range cacheOnly {
		if _, ok := got.Annotations[k]; ok {
			t.Errorf("Merged() kept the cache's annotation %q", k)
		}
	}
	if _, ok := cur.Annotations[keys.AnnotationDataDigest]; !ok {
		t.Errorf("Merged() changed the cached object: its digest is gone")
	}
}

// A ConfigMap copy from the cache: no data, and its data and the place of each key (data or
// binaryData) compare by digest.
func TestBoundedConfigMap(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "team-a", Labels: map[string]string{keys.LabelSecretSync: "ca", keys.LabelManagedBy: keys.ManagedByValue}, Annotations: map[string]string{keys.AnnotationSource: "platform/ca"}},
		Data:       map[string]string{"ca.crt": "-----BEGIN"},
		BinaryData: map[string][]byte{"ca.der": {0x30, 0x82}},
	}
	want := FromConfigMap(cm.DeepCopy())
	cached := BoundedConfigMap(cm)
	if cached.Data != nil || cached.BinaryData != nil {
		t.Errorf("data kept: %v %v", cached.Data, cached.BinaryData)
	}
	env := FromConfigMap(cached)
	if !InStep(env, want) {
		t.Errorf("the cached ConfigMap is not in step with its own data")
	}
	changed := want.DeepCopy()
	changed.Data["ca.crt"] = []byte("-----BEGIN2")
	if InStep(env, changed) {
		t.Errorf("the cached ConfigMap is in step with changed data")
	}
	moved := want.DeepCopy()
	delete(moved.Annotations, keys.AnnotationBinaryKeys) // ca.der wanted in data, not binaryData
	if InStep(env, moved) {
		t.Errorf("the cached ConfigMap is in step with a copy that holds its binary key in data")
	}
}

func TestMerged(t *testing.T) {
	cases := []struct {
		name      string
		cur, want *corev1.Secret
		merged    *corev1.Secret
	}{
		{
			name: "data comes from want; foreign labels, annotations, owners and server fields stay",
			cur: inStepBase(
				withData("user", "admin", "pass", "old"),
				withLabel("team", "a"),
				withAnnotation("reloader.stakater.com/match", "true"),
				withOwner("App", "web", "abc"),
			),
			want: inStepWant(withData("user", "admin", "pass", "new")),
			merged: inStepBase(
				withData("user", "admin", "pass", "new"),
				withLabel("team", "a"),
				withAnnotation("reloader.stakater.com/match", "true"),
				withOwner("App", "web", "abc"),
			),
		},
		{
			name: "our label and annotation removed by someone are restored, next to theirs",
			cur: inStepBase(
				withoutLabel(keys.LabelSecretSync),
				withoutAnnotation(keys.AnnotationSource),
				withLabel("team", "a"),
				withAnnotation("note", "keep"),
			),
			want:   inStepWant(),
			merged: inStepBase(withLabel("team", "a"), withAnnotation("note", "keep")),
		},
		{
			name:   "our keys set to other values are set back to ours",
			cur:    inStepBase(withLabel(keys.LabelManagedBy, "Helm"), withAnnotation(keys.AnnotationSource, "old/creds")),
			want:   inStepWant(),
			merged: inStepBase(),
		},
		{
			name:   "the deletion policy comes from want",
			cur:    inStepBase(withAnnotation(keys.AnnotationDeletionPolicy, "Delete"), withAnnotation("note", "keep")),
			want:   inStepWant(withAnnotation(keys.AnnotationDeletionPolicy, "Orphan")),
			merged: inStepBase(withAnnotation(keys.AnnotationDeletionPolicy, "Orphan"), withAnnotation("note", "keep")),
		},
		{
			name:   "one of our keys that want does not carry is removed from the copy",
			cur:    inStepBase(withAnnotation(keys.AnnotationDeletionPolicy, "Delete"), withAnnotation("note", "keep")),
			want:   inStepWant(),
			merged: inStepBase(withAnnotation("note", "keep")),
		},
		{
			name:   "a copy with no labels or annotations gets ours",
			cur:    inStepBase(func(s *corev1.Secret) { s.Labels, s.Annotations = nil, nil }),
			want:   inStepWant(),
			merged: inStepBase(),
		},
		{
			name:   "immutability comes from want",
			cur:    inStepBase(),
			want:   inStepWant(withImmutable(true)),
			merged: inStepBase(withImmutable(true)),
		},
		{
			name:   "type comes from want",
			cur:    inStepBase(),
			want:   inStepWant(withType(corev1.SecretTypeDockerConfigJson)),
			merged: inStepBase(withType(corev1.SecretTypeDockerConfigJson)),
		},
		{
			name:   "stringData on the live object is dropped so that it cannot override data",
			cur:    inStepBase(func(s *corev1.Secret) { s.StringData = map[string]string{"pass": "old"} }),
			want:   inStepWant(),
			merged: inStepBase(),
		},
		{
			name: "our keys a tenant added (an offer, any other) are removed; the tenant's own keys stay",
			cur: inStepBase(withLabel(keys.LabelOffer, "true"), withAnnotation(keys.AnnotationOfferNamespaces, "*"),
				withLabel("ops.platform-operators.io/other", "x"), withLabel("team", "a")),
			want:   inStepWant(),
			merged: inStepBase(withLabel("team", "a")),
		},
		{
			name:   "keys removed from the source are removed from the copy",
			cur:    inStepBase(withData("user", "admin", "pass", "s3cr3t", "stale", "x")),
			want:   inStepWant(),
			merged: inStepBase(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cur.DeepCopy()
			got := Merged(tc.cur, tc.want)
			assertSemantic(t, "Merged()", got, tc.merged)
			assertExact(t, "current after Merged()", tc.cur, before)
			if got == tc.cur {
				t.Errorf("Merged() returned the live object itself; want a new one")
			}
			if !InStep(got, tc.want) {
				t.Errorf("InStep(Merged(cur, want), want) = false, want true")
			}
		})
	}
}

func TestReleased(t *testing.T) {
	cases := []struct {
		name     string
		cur      *corev1.Secret
		released *corev1.Secret
	}{
		{
			name: "our label, our managed-by, the source and deletion-policy annotations go; everything else stays",
			cur: inStepBase(
				withAnnotation(keys.AnnotationDeletionPolicy, "Orphan"),
				withLabel("team", "a"),
				withAnnotation("reloader.stakater.com/match", "true"),
				withOwner("App", "web", "abc"),
			),
			released: inStepBase(
				withoutLabel(keys.LabelSecretSync),
				withoutLabel(keys.LabelManagedBy),
				withoutAnnotation(keys.AnnotationSource),
				withLabel("team", "a"),
				withAnnotation("reloader.stakater.com/match", "true"),
				withOwner("App", "web", "abc"),
			),
		},
		{
			name:     "a managed-by label with another value is someone else's and stays",
			cur:      inStepBase(withLabel(keys.LabelManagedBy, "Helm")),
			released: inStepBase(withoutLabel(keys.LabelSecretSync), withoutAnnotation(keys.AnnotationSource), withLabel(keys.LabelManagedBy, "Helm")),
		},
		{
			name: "keys that only look like ours stay",
			cur: inStepBase(
				withLabel("ops.platform-operators.io/tier", "gold"),
				withAnnotation("ops.platform-operators.io/note", "hand-made"),
			),
			released: inStepBase(
				withoutLabel(keys.LabelSecretSync),
				withoutLabel(keys.LabelManagedBy),
				withoutAnnotation(keys.AnnotationSource),
				withLabel("ops.platform-operators.io/tier", "gold"),
				withAnnotation("ops.platform-operators.io/note", "hand-made"),
			),
		},
		{
			name: "data, type and immutability are untouched",
			cur: inStepBase(withType(corev1.SecretTypeDockerConfigJson), withImmutable(true),
				withData(), withBytes(corev1.DockerConfigJsonKey, []byte{0x7b, 0xff, 0x7d})),
			released: inStepBase(withType(corev1.SecretTypeDockerConfigJson), withImmutable(true),
				withData(), withBytes(corev1.DockerConfigJsonKey, []byte{0x7b, 0xff, 0x7d}),
				withoutLabel(keys.LabelSecretSync), withoutLabel(keys.LabelManagedBy), withoutAnnotation(keys.AnnotationSource)),
		},
		{
			name:     "a Secret without labels or annotations is returned as it is",
			cur:      inStepBase(func(s *corev1.Secret) { s.Labels, s.Annotations = nil, nil }),
			released: inStepBase(func(s *corev1.Secret) { s.Labels, s.Annotations = nil, nil }),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cur.DeepCopy()
			got := Released(tc.cur)
			assertSemantic(t, "Released()", got, tc.released)
			assertExact(t, "current after Released()", tc.cur, before)
			if _, ok := got.Labels[keys.LabelSecretSync]; ok {
				t.Errorf("Released() kept label %q", keys.LabelSecretSync)
			}
			for _, k := range []string{keys.AnnotationSource, keys.AnnotationDeletionPolicy} {
				if _, ok := got.Annotations[k]; ok {
					t.Errorf("Released() kept annotation %q", k)
				}
			}
		})
	}
}
