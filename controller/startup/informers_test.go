package startup

import (
	"context"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
)

func TestInformersSynced(t *testing.T) {
	type step struct {
		synced  []bool // HasSynced of each informer at this step
		wantErr string // "" means ready
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{name: "no informers is ready at once", steps: []step{{synced: nil}}},
		{name: "not ready until every informer has synced", steps: []step{
			{synced: []bool{false, false}, wantErr: "informers not synced: 0/2 synced; waiting for Secret, Job"},
			{synced: []bool{true, false}, wantErr: "1/2 synced; waiting for Job"},
			{synced: []bool{true, true}},
		}},
		{name: "once ready it stays ready when an informer reports unsynced again", steps: []step{
			{synced: []bool{true, true}},
			{synced: []bool{false, true}},
			{synced: []bool{false, false}},
		}},
		{name: "an informer that synced and went back before the others synced holds it back", steps: []step{
			{synced: []bool{true, false}, wantErr: "waiting for Job"},
			{synced: []bool{false, true}, wantErr: "waiting for Secret"},
			{synced: []bool{true, true}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{&corev1.Secret{}, &batchv1.Job{}}
			if len(tc.steps[0].synced) == 0 {
				objs = nil
			}
			fakes := &switchableInformers{FakeInformers: &informertest.FakeInformers{Scheme: scheme.Scheme}}
			check, err := WarmInformers(context.Background(), fakes, scheme.Scheme, objs)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				for j, synced := range s.synced {
					fakes.requested[j].synced = synced
				}
				err := check.Check(nil)
				switch {
				case s.wantErr == "" && err != nil:
					t.Fatalf("step %d: check = %v, want ready", i, err)
				case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
					t.Fatalf("step %d: check = %v, want an error containing %q", i, err, s.wantErr)
				}
			}
		})
	}
}

// switchableInformers hands out informers whose HasSynced the test sets (controllertest's fake
// informer can only go from unsynced to synced), in the order they were requested.
type switchableInformers struct {
	*informertest.FakeInformers
	requested []*switchableInformer
}

type switchableInformer struct {
	*controllertest.FakeInformer
	synced bool
}

func (s *switchableInformer) HasSynced() bool { return s.synced }

func (f *switchableInformers) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	inf := &switchableInformer{FakeInformer: controllertest.NewFakeInformer()}
	f.requested = append(f.requested, inf)
	return inf, nil
}

func TestWarmInformersRequestsEachKindOnce(t *testing.T) {
	fakes := &informertest.FakeInformers{Scheme: scheme.Scheme}
	check, err := WarmInformers(context.Background(), fakes, scheme.Scheme, []client.Object{&batchv1.Job{}, &corev1.Namespace{}, &batchv1.Job{}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := check.Kinds(), []string{"Job", "Namespace"}; !slices.Equal(got, want) {
		t.Errorf("kinds = %q, want %q", got, want)
	}
	if len(fakes.InformersByGVK) != 2 {
		t.Errorf("the cache holds %d informers, want 2: %v", len(fakes.InformersByGVK), fakes.InformersByGVK)
	}
}

// Kinds lists the kinds of the informers the check waits for, in the order requested.
func (s *InformersSynced) Kinds() []string { return append([]string(nil), s.kinds...) }
