package cachebounds

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// calls is a cache that records what reached it (and starts nothing).
type calls struct {
	cache.Cache
	got []string
}

func (c *calls) Start(ctx context.Context) error { <-ctx.Done(); return nil }
func (c *calls) note(op string, o any)           { c.got = append(c.got, fmt.Sprintf("%s %T", op, o)) }
func (c *calls) GetInformer(_ context.Context, o client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	c.note("informer", o)
	return nil, nil
}
func (c *calls) GetInformerForKind(_ context.Context, gvk schema.GroupVersionKind, _ ...cache.InformerGetOption) (cache.Informer, error) {
	c.note("informer", gvk.Kind)
	return nil, nil
}
func (c *calls) IndexField(_ context.Context, o client.Object, _ string, _ client.IndexerFunc) error {
	c.note("index", o)
	return nil
}

// unknown is a type no scheme registers.
type unknown struct{ corev1.ConfigMap }

func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

func unstructuredListOf(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(gvk)
	return u
}

// A cache built here starts informers only for the kinds, in the form, its inventory declares:
// every other request for one is refused before it reaches the cache below (which would start
// it), with an error that names the kind, and is recorded once for the enumerating test.
func TestAnUndeclaredKindIsRefused(t *testing.T) {
	secrets := corev1.SchemeGroupVersion.WithKind("Secret")
	pods := corev1.SchemeGroupVersion.WithKind("Pod")
	inv := Inventory{Name: "refusing", Kinds: []Kind{
		{Object: &corev1.Secret{}, Transform: keep},
		{Object: metadataOf(pods), Transform: keep},
	}}
	ctx := context.Background()
	type request struct {
		name string
		do   func(c cache.Cache) error
	}
	allowed := []request{
		{"informer of a declared kind", func(c cache.Cache) error { _, err := c.GetInformer(ctx, &corev1.Secret{}); return err }},
		{"informer of a declared kind by its GroupVersionKind", func(c cache.Cache) error { _, err := c.GetInformerForKind(ctx, secrets); return err }},
		{"index of a declared kind", func(c cache.Cache) error { return c.IndexField(ctx, &corev1.Secret{}, "f", nil) }},
		{"metadata of a kind declared as metadata", func(c cache.Cache) error { _, err := c.GetInformer(ctx, metadataOf(pods)); return err }},
	}
	refused := []request{
		{"informer of an undeclared kind", func(c cache.Cache) error { _, err := c.GetInformer(ctx, &corev1.Event{}); return err }},
		{"informer of an undeclared kind by its GroupVersionKind", func(c cache.Cache) error {
			_, err := c.GetInformerForKind(ctx, corev1.SchemeGroupVersion.WithKind("Event"))
			return err
		}},
		{"index of an undeclared kind", func(c cache.Cache) error { return c.IndexField(ctx, &corev1.ServiceAccount{}, "f", nil) }},
		// A transform written for the typed form leaves another form whole.
		{"a declared kind read unstructured", func(c cache.Cache) error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(secrets)
			_, err := c.GetInformer(ctx, u)
			return err
		}},
		{"a declared kind read as metadata", func(c cache.Cache) error { _, err := c.GetInformer(ctx, metadataOf(secrets)); return err }},
		{"a kind declared as metadata read typed", func(c cache.Cache) error { return c.IndexField(ctx, &corev1.Pod{}, "f", nil) }},
		{"a kind declared as metadata by its GroupVersionKind (typed)", func(c cache.Cache) error { _, err := c.GetInformerForKind(ctx, pods); return err }},
	}
	for _, r := range allowed {
		t.Run(r.name, func(t *testing.T) {
			inner := &calls{}
			c, err := wrap(inner, inv, scheme.Scheme, &record{})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.do(c); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if len(inner.got) != 1 {
				t.Errorf("the cache below got %v, want the request", inner.got)
			}
		})
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			inner := &calls{}
			c, err := wrap(inner, inv, scheme.Scheme, &record{})
			if err != nil {
				t.Fatal(err)
			}
			err = r.do(c)
			if !IsUndeclared(err) {
				t.Fatalf("error %v, want an UndeclaredError", err)
			}
			if len(inner.got) != 0 {
				t.Errorf("the cache below got %v (it would start an informer)", inner.got)
			}
			_ = r.do(c) // asked again: still refused, recorded once
			got := c.rec.list()
			if len(got) != 1 || got[0].Cache != "refusing" || got[0].Refused == "" || got[0].Declared || got[0].Store != nil {
				t.Errorf("recorded %+v, want the refusal once", got)
			}
		})
	}
	t.Run("the error says what to do", func(t *testing.T) {
		c, err := wrap(&calls{}, inv, scheme.Scheme, &record{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetInformer(ctx, &corev1.ConfigMap{})
		want := "cache refusing refuses typed /v1, Kind=ConfigMap: the kind is not declared in its inventory (controller/cachebounds), so it has no bound; declare it with its bound, or read it from the API (APIReader)"
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("a type the scheme does not know is refused, the cache below not asked", func(t *testing.T) {
		inner := &calls{}
		c, err := wrap(inner, inv, scheme.Scheme, &record{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetInformer(ctx, &unknown{}); err == nil || len(inner.got) != 0 {
			t.Errorf("error %v, the cache below got %v", err, inner.got)
		}
	})
	t.Run("a cache built here is known as one", func(t *testing.T) {
		c, err := wrap(&calls{}, inv, nil, &record{})
		if err != nil {
			t.Fatal(err)
		}
		if !Bounded(c) || Bounded(&calls{}) {
			t.Error("Bounded does not tell a cache built here from another")
		}
	})
	t.Run("metadata declared without its kind is refused when the cache is built", func(t *testing.T) {
		if _, err := wrap(&calls{}, Inventory{Name: "c", Kinds: []Kind{{Object: &metav1.PartialObjectMetadata{}, Transform: keep}}}, nil, &record{}); err == nil {
			t.Error("built")
		}
	})
}

// Get and List answer only for a kind that has an informer (controller-runtime's
// ReaderFailOnMissingInformer), and a cache built here starts informers of declared kinds only:
// a read of any other kind, or of a declared kind in another form, fails with an error the
// callers recognise (IsUndeclared) and starts no informer. The manager's cache asks for the
// informer of every declared kind when it is built; a cache of New, when a watch asks.
func TestAnUndeclaredKindIsNotRead(t *testing.T) {
	secrets := corev1.SchemeGroupVersion.WithKind("Secret")
	pods := corev1.SchemeGroupVersion.WithKind("Pod")
	inv := Inventory{Name: "reading", Kinds: []Kind{
		{Object: &corev1.Secret{}, Transform: keep},
		{Object: metadataOf(pods), Transform: keep},
	}}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"Secret", "ConfigMap", "Pod", "Event"} {
		mapper.Add(corev1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	cfg := &rest.Config{Host: "http://127.0.0.1:1"} // never started: nothing is sent
	ctx := context.Background()
	reads := map[string]func(c cache.Cache) error{
		"get of an undeclared kind":  func(c cache.Cache) error { return c.Get(ctx, client.ObjectKey{Name: "x"}, &corev1.ConfigMap{}) },
		"list of an undeclared kind": func(c cache.Cache) error { return c.List(ctx, &corev1.EventList{}) },
		// A transform written for the typed form leaves another form whole.
		"a declared kind read unstructured": func(c cache.Cache) error { return c.List(ctx, unstructuredListOf(secrets)) },
		"a declared kind read as metadata": func(c cache.Cache) error {
			return c.Get(ctx, client.ObjectKey{Name: "x"}, metadataOf(secrets))
		},
		"a kind declared as metadata read typed": func(c cache.Cache) error { return c.List(ctx, &corev1.PodList{}) },
	}
	declared := func(t *testing.T, c cache.Cache) {
		t.Helper()
		for _, o := range []client.Object{&corev1.Secret{}, metadataOf(pods)} {
			if err := c.Get(ctx, client.ObjectKey{Name: "x"}, o); IsUndeclared(err) {
				t.Errorf("%T of a declared kind refused: %v", o, err)
			}
		}
	}
	for _, built := range []struct {
		name  string
		build func(t *testing.T) (cache.Cache, *record)
	}{
		{"a cache of New, its watches started", func(t *testing.T) (cache.Cache, *record) {
			c, err := New(cfg, inv, cache.Options{Mapper: mapper})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range inv.Kinds {
				if _, err := c.GetInformer(ctx, k.Object, cache.BlockUntilSynced(false)); err != nil {
					t.Fatal(err)
				}
			}
			return c, c.(*bounded).rec
		}},
		{"the manager's cache, as built", func(t *testing.T) (cache.Cache, *record) {
			var opts manager.Options
			if err := ManagerOptions(inv, cache.Options{Mapper: mapper}, &opts); err != nil {
				t.Fatal(err)
			}
			c, err := opts.NewCache(cfg, opts.Cache)
			if err != nil {
				t.Fatal(err)
			}
			return c, c.(*bounded).rec
		}},
	} {
		t.Run(built.name, func(t *testing.T) {
			c, rec := built.build(t)
			declared(t, c)
			for name, read := range reads {
				if err := read(c); !IsUndeclared(err) {
					t.Errorf("%s: error %v, want the cache's refusal", name, err)
				}
			}
			if got := rec.list(); len(got) != 2 || !got[0].Declared || !got[1].Declared {
				t.Errorf("informers %+v, want the two declared ones only", got)
			}
		})
	}
}
