package leaderfence

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
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

// recorder is the transport below the fence: it records what reaches it.
type recorder struct{ got []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req.Method+" "+req.URL.Path)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func TestTheFencedTransportRefusesWritesButNotReadsOrReviews(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	f := New(clk, 10*time.Second)
	_ = f.Lock(&fakeLock{}).Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	base := &recorder{}
	rt := f.WrapTransport(base)
	send := func(method, path string) error {
		req := httptest.NewRequest(method, "https://api"+path, strings.NewReader("{}"))
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		return err
	}
	const secret, pod = "/api/v1/namespaces/ns/secrets/s", "/api/v1/namespaces/ns/pods/p/status"
	writes := [][2]string{
		{http.MethodPost, "/api/v1/namespaces/ns/configmaps"}, {http.MethodPut, secret}, {http.MethodPatch, secret},
		{http.MethodPatch, pod}, {http.MethodDelete, secret}, {http.MethodDelete, "/api/v1/namespaces/ns/configmaps"},
	}
	passes := [][2]string{
		{http.MethodGet, secret}, {http.MethodGet, "/api/v1/secrets?watch=true"}, {http.MethodHead, secret}, {http.MethodOptions, secret},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews"},
	}
	for _, w := range append(slices.Clone(writes), passes...) {
		if err := send(w[0], w[1]); err != nil {
			t.Errorf("%s %s while the Lease is held: %v", w[0], w[1], err)
		}
	}
	if len(base.got) != len(writes)+len(passes) {
		t.Fatalf("reached the API server while held: %v", base.got)
	}
	clk.Step(11 * time.Second) // frozen past the renew deadline
	base.got = nil
	for _, w := range writes {
		if err := send(w[0], w[1]); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("%s %s after the renew deadline passed: %v, want ErrLeaseLost", w[0], w[1], err)
		}
	}
	for _, w := range passes {
		if err := send(w[0], w[1]); err != nil {
			t.Errorf("%s %s after the renew deadline (a read or a review, asked by every replica): %v", w[0], w[1], err)
		}
	}
	if len(base.got) != len(passes) {
		t.Errorf("reached the API server after the deadline: %v, want only the reads and reviews", base.got)
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
