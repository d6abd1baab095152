package propagation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// namespace is an Active namespace with the given labels.
func namespace(name string, lbls map[string]string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("labels.Parse(%q): %v", s, err)
	}
	return sel
}

func TestTargets(t *testing.T) {
	// What the reconciler gets for an empty namespaceSelector.
	emptyLabelSelector, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{})
	if err != nil {
		t.Fatal(err)
	}

	// A cluster, deliberately listed out of order.
	cluster := func() []*corev1.Namespace {
		return []*corev1.Namespace{
			namespace("team-b", map[string]string{"env": "prod"}),
			namespace("kube-system", nil),
			namespace("infra", map[string]string{"env": "prod"}),
			namespace("team-d", map[string]string{"env": "dev", "legacy": "true"}),
			namespace("team-a", map[string]string{"env": "prod"}),
			namespace("sandbox", nil),
			namespace("team-c", map[string]string{"env": "dev"}),
		}
	}
	deletedNS := namespace("team-gone", map[string]string{"env": "prod"})
	deletedNS.DeletionTimestamp = &deletingAt
	deletedNS.Status.Phase = corev1.NamespaceActive // the phase lags behind the timestamp
	terminatingNS := namespace("team-ending", map[string]string{"env": "prod"})
	terminatingNS.Status.Phase = corev1.NamespaceTerminating
	phaseless := namespace("team-new", map[string]string{"env": "prod"})
	phaseless.Status.Phase = ""

	cases := []struct {
		name       string
		namespaces []*corev1.Namespace
		selector   labels.Selector
		include    []string
		exclude    []string
		source     string
		want       []string
	}{
		{
			name:       "a nil selector targets every namespace except the source",
			namespaces: cluster(),
			source:     srcNS,
			want:       []string{"kube-system", "sandbox", "team-a", "team-b", "team-c", "team-d"},
		},
		{
			name:       "an empty selector (labels.Everything) targets every namespace except the source",
			namespaces: cluster(),
			selector:   labels.Everything(),
			source:     srcNS,
			want:       []string{"kube-system", "sandbox", "team-a", "team-b", "team-c", "team-d"},
		},
		{
			name:       "an empty LabelSelector, as converted for the reconciler, targets every namespace except the source",
			namespaces: cluster(),
			selector:   emptyLabelSelector,
			source:     srcNS,
			want:       []string{"kube-system", "sandbox", "team-a", "team-b", "team-c", "team-d"},
		},
		{
			name:       "a selector that matches nothing targets nothing",
			namespaces: cluster(),
			selector:   labels.Nothing(),
			source:     srcNS,
			want:       nil,
		},
		{
			name:       "an equality selector targets only the namespaces whose labels match",
			namespaces: cluster(),
			selector:   labels.SelectorFromSet(labels.Set{"env": "dev"}),
			source:     srcNS,
			want:       []string{"team-c", "team-d"},
		},
		{
			name:       "a set-based selector is honoured, including a does-not-exist term",
			namespaces: cluster(),
			selector:   mustSelector(t, "env in (dev,prod),!legacy"),
			source:     srcNS,
			want:       []string{"team-a", "team-b", "team-c"},
		},
		{
			name:       "a selector on a label no namespace has targets nothing",
			namespaces: cluster(),
			selector:   labels.SelectorFromSet(labels.Set{"tier": "gold"}),
			source:     srcNS,
			want:       nil,
		},
		{
			name:       "excluded namespaces get nothing even when the selector matches them",
			namespaces: cluster(),
			selector:   labels.SelectorFromSet(labels.Set{"env": "prod"}),
			exclude:    []string{"team-a"},
			source:     srcNS,
			want:       []string{"team-b"},
		},
		{
			name:       "excluded namespaces get nothing with a nil selector",
			namespaces: cluster(),
			exclude:    []string{"kube-system", "kube-public", "kube-node-lease", "sandbox"},
			source:     srcNS,
			want:       []string{"team-a", "team-b", "team-c", "team-d"},
		},
		{
			name:       "excluding a namespace that does not exist changes nothing",
			namespaces: cluster(),
			selector:   labels.SelectorFromSet(labels.Set{"env": "prod"}),
			exclude:    []string{"nowhere"},
			source:     srcNS,
			want:       []string{"team-a", "team-b"},
		},
		{
			name:       "the source namespace is never a target even when the selector matches it and it is not excluded",
			namespaces: cluster(),
			selector:   labels.SelectorFromSet(labels.Set{"env": "prod"}),
			exclude:    []string{"kube-system"},
			source:     srcNS,
			want:       []string{"team-a", "team-b"},
		},
		{
			name:       "whichever namespace is the source is skipped, and the others the selector matches stay",
			namespaces: cluster(),
			selector:   labels.SelectorFromSet(labels.Set{"env": "prod"}),
			source:     "team-a",
			want:       []string{"infra", "team-b"},
		},
		{
			name: "a selector naming only the source namespace targets nothing",
			namespaces: []*corev1.Namespace{
				namespace("infra", map[string]string{corev1.LabelMetadataName: "infra"}),
				namespace("team-a", map[string]string{corev1.LabelMetadataName: "team-a"}),
			},
			selector: labels.SelectorFromSet(labels.Set{corev1.LabelMetadataName: "infra"}),
			source:   srcNS,
			want:     nil,
		},
		{
			name:       "a namespace with a deletion timestamp is skipped even while its phase still says Active",
			namespaces: []*corev1.Namespace{namespace("team-a", map[string]string{"env": "prod"}), deletedNS},
			source:     srcNS,
			want:       []string{"team-a"},
		},
		{
			name:       "a namespace in phase Terminating is skipped even without a deletion timestamp",
			namespaces: []*corev1.Namespace{terminatingNS, namespace("team-a", map[string]string{"env": "prod"})},
			selector:   labels.SelectorFromSet(labels.Set{"env": "prod"}),
			source:     srcNS,
			want:       []string{"team-a"},
		},
		{
			name:       "a namespace with no phase yet is a target",
			namespaces: []*corev1.Namespace{phaseless},
			source:     srcNS,
			want:       []string{"team-new"},
		},
		{
			name:       "the result is sorted whatever the order of the input",
			namespaces: []*corev1.Namespace{namespace("zeta", nil), namespace("alpha", nil), namespace("mid", nil), namespace("Alpha", nil), namespace("alpha-2", nil)},
			source:     srcNS,
			want:       []string{"Alpha", "alpha", "alpha-2", "mid", "zeta"},
		},
		{
			name:   "no namespaces, no targets",
			source: srcNS,
			want:   nil,
		},
		{
			name:       "exclude globs: a prefix and a suffix pattern",
			namespaces: append(cluster(), namespace("cert-system", nil), namespace("kube-public", nil)),
			exclude:    []string{"kube-*", "*-system"},
			source:     srcNS, // infra
			want:       []string{"sandbox", "team-a", "team-b", "team-c", "team-d"},
		},
		{
			name:       "include globs narrow the selector's choice (both must match)",
			namespaces: cluster(),
			selector:   mustSelector(t, "env=prod"),
			include:    []string{"team-?", "sandbox"},
			source:     srcNS,
			want:       []string{"team-a", "team-b"},
		},
		{
			name:       "exclude wins over include",
			namespaces: cluster(),
			include:    []string{"team-*"},
			exclude:    []string{"team-d"},
			source:     srcNS,
			want:       []string{"team-a", "team-b", "team-c"},
		},
		{
			name:       "an include that matches nothing gives no targets",
			namespaces: cluster(),
			include:    []string{"prod-*"},
			source:     srcNS,
			want:       nil,
		},
		{
			name:       "a malformed pattern matches only its own text",
			namespaces: append(cluster(), namespace("team-[", nil)),
			exclude:    []string{"team-["},
			include:    []string{"team-["},
			source:     srcNS,
			want:       nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Targets(tc.namespaces, tc.selector, tc.include, tc.exclude, tc.source)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Targets() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSourceMatches(t *testing.T) {
	emptyLabelSelector, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{})
	if err != nil {
		t.Fatal(err)
	}
	dockerConfig := corev1.SecretTypeDockerConfigJson
	shared := labels.SelectorFromSet(labels.Set{"share": "true"})

	cases := []struct {
		name     string
		secret   *corev1.Secret
		srcName  string
		selector labels.Selector
		typ      corev1.SecretType
		want     bool
	}{
		{
			name:    "a Secret with the given name matches",
			secret:  secret(srcNS, credsName),
			srcName: credsName,
			want:    true,
		},
		{
			name:     "a selector never picks the root CA ConfigMap every namespace has",
			secret:   FromConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: srcNS, Name: RootCAConfigMap}}),
			selector: emptyLabelSelector,
			want:     false,
		},
		{
			name:     "a selector picks other ConfigMaps",
			secret:   FromConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: srcNS, Name: "ca-bundle"}}),
			selector: emptyLabelSelector,
			want:     true,
		},
		{
			name:     "a Secret named like the root CA ConfigMap is not one",
			secret:   secret(srcNS, RootCAConfigMap),
			selector: emptyLabelSelector,
			want:     true,
		},
		{
			name:    "a Secret with another name does not match",
			secret:  secret(srcNS, "registry-creds-old"),
			srcName: credsName,
			want:    false,
		},
		{
			name:    "a name is compared exactly, not as a prefix",
			secret:  secret(srcNS, "registry"),
			srcName: credsName,
			want:    false,
		},
		{
			name:     "a Secret whose labels the selector matches matches",
			secret:   secret(srcNS, "a", withLabel("share", "true"), withLabel("team", "x")),
			selector: shared,
			want:     true,
		},
		{
			name:     "a Secret whose labels the selector does not match does not match",
			secret:   secret(srcNS, "a", withLabel("share", "false")),
			selector: shared,
			want:     false,
		},
		{
			name:     "a Secret without labels does not match a non-empty selector",
			secret:   secret(srcNS, "a"),
			selector: shared,
			want:     false,
		},
		{
			name:     "an empty selector (labels.Everything) matches a Secret without labels",
			secret:   secret(srcNS, "a"),
			selector: labels.Everything(),
			want:     true,
		},
		{
			name:     "an empty LabelSelector, as converted for the reconciler, matches any Secret",
			secret:   secret(srcNS, "a", withLabel("whatever", "x")),
			selector: emptyLabelSelector,
			want:     true,
		},
		{
			name:     "a selector that matches nothing matches no Secret",
			secret:   secret(srcNS, "a"),
			selector: labels.Nothing(),
			want:     false,
		},
		{
			name:   "a nil selector with an empty name matches nothing",
			secret: secret(srcNS, "a", withLabel("share", "true")),
			want:   false,
		},
		{
			name:   "a nil selector with an empty name matches nothing, even with a type that matches",
			secret: secret(srcNS, "a", withType(dockerConfig)),
			typ:    dockerConfig,
			want:   false,
		},
		{
			name:    "a type filter keeps a named Secret of that type",
			secret:  secret(srcNS, credsName, withType(dockerConfig)),
			srcName: credsName,
			typ:     dockerConfig,
			want:    true,
		},
		{
			name:    "a type filter drops a named Secret of another type",
			secret:  secret(srcNS, credsName),
			srcName: credsName,
			typ:     dockerConfig,
			want:    false,
		},
		{
			name:     "a type filter keeps a selected Secret of that type",
			secret:   secret(srcNS, "a", withLabel("share", "true"), withType(dockerConfig)),
			selector: shared,
			typ:      dockerConfig,
			want:     true,
		},
		{
			name:     "a type filter drops a selected Secret of another type",
			secret:   secret(srcNS, "a", withLabel("share", "true"), withType(corev1.SecretTypeTLS)),
			selector: shared,
			typ:      dockerConfig,
			want:     false,
		},
		{
			name:     "a type filter drops Secrets of other types even with an empty selector",
			secret:   secret(srcNS, "a", withType(corev1.SecretTypeServiceAccountToken)),
			selector: labels.Everything(),
			typ:      corev1.SecretTypeOpaque,
			want:     false,
		},
		{
			name:    "a named Secret being deleted is not a source",
			secret:  secret(srcNS, credsName, beingDeleted()),
			srcName: credsName,
			want:    false,
		},
		{
			name:     "a selected Secret being deleted is not a source",
			secret:   secret(srcNS, "a", withLabel("share", "true"), beingDeleted()),
			selector: labels.Everything(),
			want:     false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SourceMatches(tc.secret, tc.srcName, tc.selector, tc.typ); got != tc.want {
				t.Errorf("SourceMatches(%s/%s, name=%q, selector=%v, type=%q) = %v, want %v",
					tc.secret.Namespace, tc.secret.Name, tc.srcName, tc.selector, tc.typ, got, tc.want)
			}
		})
	}
}
