package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

const (
	// nsModeTarget is a namespace of rbac.namespaces in namespaced mode, for SecretSync's copies.
	nsModeTarget = "e2e-nsmode-team"
	// nsModeOutside is a namespace outside rbac.namespaces.
	nsModeOutside = "e2e-nsmode-outside"
	nsModeSync    = "e2e-nsmode"
)

// With rbac.scope=namespaced and SecretSync on (the chart's default), the manager holds Roles in
// the listed namespaces and the chart-added source namespace, and cluster-wide only SecretSyncs:
// the default SecretSync's seed reaches a listed namespace; a SecretSync aimed at a listed and an
// unlisted namespace copies into the listed one and reports the other once. The pull secret's own
// test (TestPullSecret) runs in this mode too.
func TestSecretSyncInNamespacedMode(t *testing.T) {
	if !namespacedMode() {
		t.Skip("E2E_RBAC_SCOPE is not namespaced: the cluster-mode SecretSync tests cover this run")
	}
	f := features.New("SecretSync with rbac.scope=namespaced copies into the listed namespaces only").
		Assess("the default SecretSync's seed reaches a listed namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			data := map[string][]byte{"token": {0x00, 0xff, 'n'}}
			src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "e2e-nsmode-seed"}, Type: "platform-operators.io/secretsync", Data: data}
			if err := c.Create(ctx, src); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), src) })
			eventually(ctx, t, "seed copy in "+nsModeTarget, func(ctx context.Context) error { return copyIs(ctx, c, nsModeTarget, src.Name, data) })
			return ctx
		}).
		Assess("a SecretSync naming an unlisted namespace copies into the listed one and says so once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			createNamespace(ctx, t, c, nsModeOutside, nil)
			data := map[string][]byte{"ca.crt": []byte("e2e namespaced")}
			src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "e2e-nsmode-src"}, Data: data}
			ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: nsModeSync}, Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: "secretsync", Name: src.Name},
				Target: v1alpha1.SecretSyncTarget{IncludeNamespaces: []string{nsModeTarget, nsModeOutside}},
			}}
			if err := c.Create(ctx, src); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, ss); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.Delete(context.Background(), ss)
				_ = c.Delete(context.Background(), src)
			})
			eventually(ctx, t, "copy in "+nsModeTarget, func(ctx context.Context) error { return copyIs(ctx, c, nsModeTarget, src.Name, data) })
			eventually(ctx, t, "Ready=False NamespaceNotManaged naming "+nsModeOutside, func(ctx context.Context) error {
				got := &v1alpha1.SecretSync{}
				if err := c.Get(ctx, types.NamespacedName{Name: ss.Name}, got); err != nil {
					return err
				}
				cond := meta.FindStatusCondition(got.Status.Conditions, "Ready")
				if cond == nil || cond.Reason != "NamespaceNotManaged" || !strings.Contains(cond.Message, nsModeOutside) {
					return fmt.Errorf("Ready = %+v", cond)
				}
				return nil
			})
			warnings := func(ctx context.Context) (int, error) {
				list := &eventsv1.EventList{}
				if err := c.List(ctx, list); err != nil {
					return 0, err
				}
				n := 0
				for _, e := range list.Items {
					if e.Regarding.Kind == "SecretSync" && e.Regarding.Name == ss.Name && e.Reason == "NamespaceNotManaged" && e.Type == corev1.EventTypeWarning {
						n++
					}
				}
				return n, nil
			}
			eventually(ctx, t, "a NamespaceNotManaged Warning Event", func(ctx context.Context) error {
				n, err := warnings(ctx)
				if err != nil {
					return err
				}
				if n == 0 {
					return errors.New("no Event yet")
				}
				return nil
			})
			// More passes: the source changes; the copy follows, the Event is not repeated.
			cur := &corev1.Secret{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: src.Namespace, Name: src.Name}, cur); err != nil {
				t.Fatal(err)
			}
			data = map[string][]byte{"ca.crt": []byte("e2e namespaced, again")}
			cur.Data = data
			if err := c.Update(ctx, cur); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "updated copy in "+nsModeTarget, func(ctx context.Context) error { return copyIs(ctx, c, nsModeTarget, src.Name, data) })
			time.Sleep(2 * time.Second) // the Events of that pass, if it emitted any
			if n, err := warnings(ctx); err != nil || n != 1 {
				t.Errorf("%d NamespaceNotManaged Warning Events (%v), want 1", n, err)
			}
			if err := c.Get(ctx, types.NamespacedName{Namespace: nsModeOutside, Name: src.Name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Errorf("copy in %s: %v, want NotFound (outside rbac.namespaces)", nsModeOutside, err)
			}
			return ctx
		}).
		Assess("a source renewed, a target list narrowed and a source deleted reach the copies under the chart's policies", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Issue 45: the manager probed the source namespace with a dry-run create, which the
			// chart's manager-writes policy refused: no copy was removed again, nor renewed.
			c := ctrlClient(t, cfg)
			data := map[string][]byte{"token": []byte("v1")}
			src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "e2e-nsmode-rotating"}, Data: data}
			ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "e2e-nsmode-rotating"}, Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: "secretsync", Name: src.Name},
				Target: v1alpha1.SecretSyncTarget{IncludeNamespaces: []string{nsModeTarget, schedulingNamespace}},
			}}
			for _, o := range []client.Object{src, ss} {
				if err := c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() {
				_ = c.Delete(context.Background(), ss)
				_ = c.Delete(context.Background(), src)
			})
			for _, ns := range []string{nsModeTarget, schedulingNamespace} {
				eventually(ctx, t, "copy in "+ns, func(ctx context.Context) error { return copyIs(ctx, c, ns, src.Name, data) })
			}
			src.Data = map[string][]byte{"token": []byte("v2")}
			if err := c.Update(ctx, src); err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{nsModeTarget, schedulingNamespace} {
				eventually(ctx, t, "renewed copy in "+ns, func(ctx context.Context) error { return copyIs(ctx, c, ns, src.Name, src.Data) })
			}
			gone := func(ns string) func(context.Context) error {
				return func(ctx context.Context) error {
					err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.Name}, &corev1.Secret{})
					if apierrors.IsNotFound(err) {
						return nil
					}
					return fmt.Errorf("copy in %s still there (%w)", ns, err)
				}
			}
			if err := edit(ctx, c, ss, func(s *v1alpha1.SecretSync) { s.Spec.Target.IncludeNamespaces = []string{nsModeTarget} }); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "copy removed from "+schedulingNamespace+", no longer a target", gone(schedulingNamespace))
			if err := c.Delete(ctx, src); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "copy of the deleted source removed from "+nsModeTarget, gone(nsModeTarget))
			return ctx
		})
	testenv.Test(t, withNamespace(f, nsModeTarget).Feature())
}
