package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

const (
	// heldCopyWindow is how long the manager's writes to a held copy are counted.
	heldCopyWindow = 20 * time.Second
	// heldCopyWrites is the most deletes and creates of Secrets the API server may see in that
	// window: an exponential backoff's few attempts. The hot loop of issue 34 made about 40
	// (20 deletes and 21 creates in 20 s, one pass a second).
	heldCopyWrites = 10
	// heldCopyEvents is the most changes a watch on the held copy may see in the window (its
	// deletionTimestamp, a status-free object has little else to change).
	heldCopyEvents = 4
	heldFinalizer  = "tenant.example/hold"
)

// apiServerSecretWrites sums the API server's apiserver_request_total for DELETE and POST of
// Secrets (no subresource, every code): a delete of an object that is already Terminating and a
// create answered AlreadyExists change nothing a watch could show, but each is a request the
// manager sent.
func apiServerSecretWrites(ctx context.Context, t *testing.T, cs kubernetes.Interface) float64 {
	t.Helper()
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("the API server's /metrics: %v", err)
	}
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="secrets"`) {
			continue
		}
		if !strings.Contains(line, `verb="DELETE"`) && !strings.Contains(line, `verb="POST"`) {
			continue
		}
		if strings.Contains(line, `subresource="`) && !strings.Contains(line, `subresource=""`) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// TestHostileTenantHoldsACopy (issue 34): a tenant (admin of its namespace) makes the copy it
// received immutable and holds it with a finalizer; then the source changes, so the copy needs a
// replace it cannot have (the delete only marks it Terminating, the create meets AlreadyExists).
// It drove a hot loop: a whole pass a second, for as long as the finalizer stayed. Now the
// manager reports the copy and retries with a backoff.
func TestHostileTenantHoldsACopy(t *testing.T) {
	skipIfNamespaced(t, "SecretSync")
	const src, tenant, label = "e2e-held-src", "e2e-held-tenant", "e2e.platform-operators.io/held"
	f := features.New("a copy a tenant holds with a finalizer and makes immutable").
		Assess("costs the manager a backoff's few writes, not a loop, and is reported", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			cs := clientset(t, cfg)
			createNamespace(ctx, t, c, src, nil)
			createNamespace(ctx, t, c, tenant, map[string]string{label: "yes"})
			tc := namespaceTenant(ctx, t, cfg, c, tenant, "admin")
			source := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "creds"}, Data: map[string][]byte{"token": []byte("v1")}}
			if err := c.Create(ctx, source); err != nil {
				t.Fatal(err)
			}
			ss := claimSync(ctx, t, c, "e2e-held", src, label)
			eventually(ctx, t, "the copy", func(ctx context.Context) error {
				return copyIs(ctx, c, tenant, "creds", map[string][]byte{"token": []byte("v1")})
			})
			// Whatever happens, the finalizer goes at the end (registered after the namespace's
			// cleanup, so it runs first): the namespace could not be deleted with it.
			t.Cleanup(func() {
				ctx := context.Background()
				_ = c.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "creds"}},
					client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			})

			cp := &corev1.Secret{}
			if err := tc.Get(ctx, types.NamespacedName{Namespace: tenant, Name: "creds"}, cp); err != nil {
				t.Fatal(err)
			}
			cp.Finalizers = append(cp.Finalizers, heldFinalizer)
			cp.Immutable = ptr.To(true)
			if err := tc.Update(ctx, cp); err != nil {
				if refusedByAdmission(err) {
					t.Logf("the tenant may not hold the copy (refused at admission): %v", err)
					managerHealthy(ctx, t, cfg)
					return ctx
				}
				t.Fatalf("the tenant holding its copy: %v", err)
			}
			w, err := cs.CoreV1().Secrets(tenant).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=creds", ResourceVersion: cp.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			// The source changes: the copy needs a replace.
			source.Data = map[string][]byte{"token": []byte("v2")}
			if err := c.Update(ctx, source); err != nil {
				t.Fatal(err)
			}
			// The first attempt (a delete that marks the copy Terminating, or a report) is made
			// within a couple of seconds; the window starts after it.
			time.Sleep(2 * time.Second)
			before := apiServerSecretWrites(ctx, t, cs)
			events := map[watch.EventType]int{}
			deadline := time.After(heldCopyWindow)
		count:
			for {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatal("the watch on the held copy ended early")
					}
					if ev.Type != watch.Bookmark {
						events[ev.Type]++
					}
				case <-deadline:
					break count
				}
			}
			writes := apiServerSecretWrites(ctx, t, cs) - before
			changes := events[watch.Added] + events[watch.Modified] + events[watch.Deleted]
			t.Logf("in %s after the source changed: %.0f Secret deletes and creates at the API server, changes of the held copy %v", heldCopyWindow, writes, events)
			if writes > heldCopyWrites {
				t.Errorf("%.0f Secret deletes and creates in %s for a copy the tenant holds: a loop, not a backoff (at most %d)", writes, heldCopyWindow, heldCopyWrites)
			}
			if changes > heldCopyEvents {
				t.Errorf("the held copy changed %d times in %s (%v): a loop, not a backoff (at most %d)", changes, heldCopyWindow, events, heldCopyEvents)
			}
			eventually(ctx, t, "the SecretSync names the held copy", func(ctx context.Context) error {
				got := &v1alpha1.SecretSync{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(ss), got); err != nil {
					return err
				}
				for _, f := range got.Status.Failures {
					if f.Namespace == tenant && f.Name == "creds" {
						return nil
					}
				}
				for _, cond := range got.Status.Conditions {
					if strings.Contains(cond.Message, tenant+"/creds") {
						return nil
					}
				}
				return fmt.Errorf("status %+v names no %s/creds (in failures or a condition)", got.Status, tenant)
			})
			// The tenant lets go: the copy follows the source again.
			if err := c.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "creds"}},
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "the released copy follows the source", func(ctx context.Context) error {
				return copyIs(ctx, c, tenant, "creds", map[string][]byte{"token": []byte("v2")})
			})
			managerHealthy(ctx, t, cfg)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
