package cachebounds

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// calls is a cache that records what reached it (and starts nothing).
type calls struct {
	cache.Cache
	got []string
}

func (c *calls) Start(ctx context.Context) error { <-ctx.Done(); return nil }
func (c *calls) note(op string, o any)           { c.got = append(c.got, fmt.Sprintf("%s %T", op, o)) }
func (c *calls) Get(_ context.Context, _ client.ObjectKey, o client.Object, _ ...client.GetOption) error {
	c.note("get", o)
	return nil
}
func (c *calls) List(_ context.Context, o client.ObjectList, _ ...client.ListOption) error {
	c.note("list", o)
	return nil
}
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

// A cache built here answers only for the kinds, in the form, its inventory declares: every
// other request is refused before it reaches the cache below (which would start an informer),
// with an error that names the kind, and is recorded once for the enumerating test.
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
		{"get of a declared kind", func(c cache.Cache) error { return c.Get(ctx, client.ObjectKey{Name: "x"}, &corev1.Secret{}) }},
		{"list of a declared kind", func(c cache.Cache) error { return c.List(ctx, &corev1.SecretList{}) }},
		{"informer of a declared kind", func(c cache.Cache) error { _, err := c.GetInformer(ctx, &corev1.Secret{}); return err }},
		{"informer of a declared kind by its GroupVersionKind", func(c cache.Cache) error { _, err := c.GetInformerForKind(ctx, secrets); return err }},
		{"index of a declared kind", func(c cache.Cache) error { return c.IndexField(ctx, &corev1.Secret{}, "f", nil) }},
		{"metadata of a kind declared as metadata", func(c cache.Cache) error {
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
			return c.List(ctx, l)
		}},
	}
	refused := []request{
		{"get of an undeclared kind", func(c cache.Cache) error { return c.Get(ctx, client.ObjectKey{Name: "x"}, &corev1.ConfigMap{}) }},
		{"list of an undeclared kind", func(c cache.Cache) error { return c.List(ctx, &corev1.ConfigMapList{}) }},
		{"informer of an undeclared kind", func(c cache.Cache) error { _, err := c.GetInformer(ctx, &corev1.Event{}); return err }},
		{"informer of an undeclared kind by its GroupVersionKind", func(c cache.Cache) error {
			_, err := c.GetInformerForKind(ctx, corev1.SchemeGroupVersion.WithKind("Event"))
			return err
		}},
		{"index of an undeclared kind", func(c cache.Cache) error { return c.IndexField(ctx, &corev1.ServiceAccount{}, "f", nil) }},
		// A transform written for the typed form leaves another form whole.
		{"a declared kind read unstructured", func(c cache.Cache) error {
			return c.List(ctx, unstructuredListOf(corev1.SchemeGroupVersion.WithKind("SecretList")))
		}},
		{"a declared kind read as metadata", func(c cache.Cache) error { _, err := c.GetInformer(ctx, metadataOf(secrets)); return err }},
		{"a kind declared as metadata read typed", func(c cache.Cache) error { return c.List(ctx, &corev1.PodList{}) }},
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
		err = c.List(ctx, &corev1.ConfigMapList{})
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
		if err := c.Get(ctx, client.ObjectKey{Name: "x"}, &unknown{}); err == nil || len(inner.got) != 0 {
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
