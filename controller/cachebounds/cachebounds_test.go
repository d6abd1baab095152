package cachebounds

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/digest"
)

func keep(o any) (any, error) { return o, nil }

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		name    string
		inv     Inventory
		base    cache.Options
		wantErr string
	}{
		{name: "a kind with a transform is taken", inv: Inventory{Name: "c", Kinds: []Kind{{Object: &corev1.Secret{}, Transform: keep}}}},
		{name: "a kind without a bound is refused", inv: Inventory{Name: "c", Kinds: []Kind{{Object: &corev1.Secret{}}}}, wantErr: "cache c: *v1.Secret has no bound"},
		{name: "a kind declared twice is refused", inv: Inventory{Name: "c", Kinds: []Kind{{Object: &corev1.Secret{}, Transform: keep}, {Object: &corev1.Secret{}, Transform: keep}}}, wantErr: "declared twice"},
		{name: "metadata of two kinds is two declarations", inv: Inventory{Name: "c", Kinds: []Kind{{Object: &metav1.PartialObjectMetadata{}, Transform: keep}, {Object: &metav1.PartialObjectMetadata{}, Transform: keep}}}},
		{name: "options that bring their own ByObject are refused", inv: Inventory{Name: "c"}, base: cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {}}}, wantErr: "come from its inventory"},
		{name: "options that bring their own default transform are refused", inv: Inventory{Name: "c"}, base: cache.Options{DefaultTransform: keep}, wantErr: "come from its inventory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts, err := options(c.inv, c.base, &record{})
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, c.wantErr)
			case c.wantErr == "" && (opts.DefaultTransform == nil || opts.NewInformer == nil || len(opts.ByObject) != len(c.inv.Kinds)):
				t.Fatalf("options not built from the inventory: %+v", opts)
			}
		})
	}
}

// A kind no inventory declared is cached as its identity only, typed or unstructured.
func TestIdentityKeepsOnlyTheIdentity(t *testing.T) {
	now := metav1.Now()
	meta := metav1.ObjectMeta{Name: "n", Namespace: "ns", UID: "u", ResourceVersion: "7", Generation: 3, DeletionTimestamp: &now,
		Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": strings.Repeat("x", 1<<20)}}
	out, err := Identity(&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": strings.Repeat("d", 1<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	cm := out.(*corev1.ConfigMap)
	if cm.Name != "n" || cm.Namespace != "ns" || cm.UID != "u" || cm.ResourceVersion != "7" || cm.Generation != 3 || cm.DeletionTimestamp == nil || cm.Labels != nil || cm.Annotations != nil || cm.Data != nil {
		t.Errorf("Identity kept %+v", cm)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "x", Version: "v1", Kind: "Thing"})
	u.SetName("n")
	u.Object["spec"] = map[string]any{"big": strings.Repeat("x", 1<<10)}
	out, err = Identity(u)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*unstructured.Unstructured); got.GetName() != "n" || got.GetKind() != "Thing" || got.Object["spec"] != nil {
		t.Errorf("Identity kept %v", got.Object)
	}
	if tomb, _ := Identity("not an object"); tomb != "not an object" {
		t.Errorf("Identity changed what it does not know: %v", tomb)
	}
}

func TestBoundedMetaKeepsOursBounded(t *testing.T) {
	m := &metav1.ObjectMeta{Name: "n", Namespace: "ns", Labels: map[string]string{"tenant": "x", keys.LabelManagedBy: "us"}, Annotations: map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("{", 200<<10),
		keys.AnnotationRunNow:                              strings.Repeat("t", 2<<10),
		keys.AnnotationAlertNoSuccessAfter:                 "26h",
	}}
	for i := range 100 {
		m.Annotations[keys.Prefix+strings.Repeat("k", i+1)] = "v"
	}
	out := BoundedMeta(m, keys.AnnotationRunNow)
	if len(out.Labels) != 1 || out.Labels[keys.LabelManagedBy] != "us" {
		t.Errorf("labels %v, want ours only", out.Labels)
	}
	if len(out.Annotations) != maxKeptKeys {
		t.Errorf("%d annotations kept, want %d", len(out.Annotations), maxKeptKeys)
	}
	if _, ok := out.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Error("a foreign annotation was kept")
	}
	if v := out.Annotations[keys.AnnotationAlertNoSuccessAfter]; v != "26h" {
		t.Errorf("a short value of ours is %q", v)
	}
	if v := out.Annotations[keys.AnnotationRunNow]; v != digest.Of([]byte(strings.Repeat("t", 2<<10))) {
		t.Errorf("a long value of ours is %q, want its digest", v)
	}
}

// Every informer a cache built from an inventory starts is recorded, declared or not, and listed
// by Built while the cache runs, and no longer once it has stopped.
func TestEveryInformerBuiltIsListedWhileItsCacheRuns(t *testing.T) {
	rec := &record{}
	opts, err := options(Inventory{Name: "recorded", Kinds: []Kind{{Object: &corev1.Secret{}, Transform: keep}}}, cache.Options{}, rec)
	if err != nil {
		t.Fatal(err)
	}
	opts.NewInformer(&toolscache.ListWatch{}, &corev1.Secret{}, 0, toolscache.Indexers{})
	opts.NewInformer(&toolscache.ListWatch{}, &corev1.Pod{}, 0, toolscache.Indexers{})
	c, err := wrap(&calls{}, Inventory{Name: "recorded"}, nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	mine := func() (out []Informer) {
		for _, i := range Built() {
			if i.Cache == "recorded" {
				out = append(out, i)
			}
		}
		return out
	}
	if got := mine(); len(got) != 0 {
		t.Errorf("listed before its cache started: %+v", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); len(mine()) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	got := mine()
	if len(got) != 2 || got[0].Type != "*v1.Secret" || !got[0].Declared || got[0].Store == nil || got[1].Type != "*v1.Pod" || got[1].Declared {
		t.Errorf("listed %+v, want the Secret informer (declared) and the Pod one (not)", got)
	}
	cancel()
	<-done
	if got := mine(); len(got) != 0 {
		t.Errorf("still listed after its cache stopped: %+v", got)
	}
}
