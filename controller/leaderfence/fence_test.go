package leaderfence

import (
	"context"
	"errors"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fakeLock answers Create and Update with err (nil: success).
type fakeLock struct {
	resourcelock.Interface
	err error
}

func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }

func TestTheFenceFollowsTheLease(t *testing.T) {
	const renewDeadline = 10 * time.Second
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	ours := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	for _, tc := range []struct {
		name string
		do   func(*clocktesting.FakeClock, *fakeLock, resourcelock.Interface)
		want bool
	}{
		{"never acquired: not held", func(*clocktesting.FakeClock, *fakeLock, resourcelock.Interface) {}, false},
		{"just acquired: held", func(_ *clocktesting.FakeClock, _ *fakeLock, l resourcelock.Interface) {
			_ = l.Create(context.Background(), ours)
		}, true},
		{"renewed 9s ago: held", func(c *clocktesting.FakeClock, _ *fakeLock, l resourcelock.Interface) {
			_ = l.Update(context.Background(), ours)
			c.Step(9 * time.Second)
		}, true},
		{"renewed the renew deadline ago (frozen past it): not held", func(c *clocktesting.FakeClock, _ *fakeLock, l resourcelock.Interface) {
			_ = l.Update(context.Background(), ours)
			c.Step(renewDeadline)
		}, false},
		{"renewals that fail do not extend it", func(c *clocktesting.FakeClock, fl *fakeLock, l resourcelock.Interface) {
			_ = l.Update(context.Background(), ours)
			fl.err = errors.New("the API server is away")
			for range 5 {
				c.Step(2 * time.Second)
				_ = l.Update(context.Background(), ours)
			}
		}, false},
		{"a failed first acquire: not held", func(_ *clocktesting.FakeClock, fl *fakeLock, l resourcelock.Interface) {
			fl.err = errors.New("conflict")
			_ = l.Create(context.Background(), ours)
		}, false},
		{"released on a graceful stop: not held at once", func(_ *clocktesting.FakeClock, _ *fakeLock, l resourcelock.Interface) {
			_ = l.Update(context.Background(), ours)
			_ = l.Update(context.Background(), resourcelock.LeaderElectionRecord{})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			f := New(clk, renewDeadline)
			fl := &fakeLock{}
			tc.do(clk, fl, f.Lock(fl))
			if got := f.Held(); got != tc.want {
				t.Errorf("Held = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAFencedClientRefusesWritesButNotReadsOrReviews(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	f := New(clk, 10*time.Second)
	_ = f.Lock(&fakeLock{}).Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
	c := f.Client(fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(secret.DeepCopy()).WithStatusSubresource(&corev1.Pod{}).Build())
	ctx := context.Background()

	writes := map[string]func() error{
		"create": func() error {
			return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm-" + clk.Now().Format("150405")}})
		},
		"update": func() error {
			var s corev1.Secret
			if err := c.Get(ctx, client.ObjectKeyFromObject(secret), &s); err != nil {
				return err
			}
			return c.Update(ctx, &s)
		},
		"patch": func() error {
			return c.Patch(ctx, secret.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"data":{"k":"dg=="}}`)))
		},
		"status patch": func() error {
			return c.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, client.RawPatch("application/merge-patch+json", []byte(`{}`)))
		},
		"delete": func() error {
			return c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "absent"}})
		},
	}
	for name, write := range writes {
		if err := write(); errors.Is(err, ErrLeaseLost) {
			t.Errorf("%s while the Lease is held: %v", name, err)
		}
	}
	clk.Step(11 * time.Second) // frozen past the renew deadline
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("%s after the renew deadline passed: %v, want ErrLeaseLost", name, err)
		}
	}
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), &s); err != nil {
		t.Errorf("a read was refused: %v", err)
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets"}}}
	if err := c.Create(ctx, review); errors.Is(err, ErrLeaseLost) {
		t.Errorf("a SelfSubjectAccessReview (the RBAC self-check, asked by every replica) was refused")
	}
}

// holderLock is a Lease lock whose record names holder, as this replica with identity "me" reads it.
type holderLock struct {
	fakeLock
	holder string
}

func (l *holderLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: l.holder}, nil, nil
}
func (l *holderLock) Identity() string { return "me" }

// A replica frozen past the Lease that reads another holder when it runs again has lost the
// Lease: OnLost ends it then, not a renew deadline of refused writes later. Nothing else does:
// not a standby that never held it, not its own renewals, not a slow renewal while it still holds
// the record.
func TestAReplicaThatFindsAnotherHolderAfterItsFenceRanOutHasLost(t *testing.T) {
	const renewDeadline = 70 * time.Second
	for _, tc := range []struct {
		name   string
		held   bool          // acquired once
		after  time.Duration // since the last renewal
		holder string
		want   []string // OnLost calls over two reads
	}{
		{"frozen past the Lease, another holds it", true, 97 * time.Second, "other", []string{"other"}},
		{"right at the renew deadline, another holds it", true, renewDeadline, "other", []string{"other"}},
		{"within the renew deadline: still ours to renew", true, renewDeadline - time.Second, "other", nil},
		{"past the deadline, still our record (a slow API server)", true, 97 * time.Second, "me", nil},
		{"past the deadline, released (no holder)", true, 97 * time.Second, "", nil},
		{"a standby that never held it", false, 97 * time.Second, "other", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC))
			f := New(clk, renewDeadline)
			var calls []string
			f.OnLost = func(holder string) { calls = append(calls, holder) }
			hl := &holderLock{holder: tc.holder}
			l := f.Lock(hl)
			if tc.held {
				if err := l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
					t.Fatal(err)
				}
			}
			clk.Step(tc.after)
			for range 2 {
				if _, _, err := l.Get(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if len(calls) != len(tc.want) || (len(calls) > 0 && calls[0] != tc.want[0]) {
				t.Errorf("OnLost calls %v, want %v", calls, tc.want)
			}
		})
	}
}
