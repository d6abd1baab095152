package leaderfence

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// ErrLeaseLost is returned for a write refused because the Lease was not renewed in time.
var ErrLeaseLost = errors.New("refusing to write: this replica has not renewed the leader Lease within its renew deadline (it may have been frozen and another replica may lead)")

// Fence knows when this replica last held the Lease.
type Fence struct {
	clock clock.PassiveClock
	// validFor is how long after a successful acquire or renew writes may pass.
	validFor time.Duration

	// OnLost, when set, is called once, with the other holder's identity, when this replica
	// reads the Lease held by another after its own right to write ran out (see lock.Get).
	OnLost func(holder string)

	mu      sync.Mutex
	renewed time.Time // when the last successful acquire/renew was sent; zero: never
	lost    bool      // OnLost was called
}

// New returns a Fence that lets writes pass for validFor (the renew deadline) after the last
// successful acquire or renew of the Lease.
func New(clk clock.PassiveClock, validFor time.Duration) *Fence {
	return &Fence{clock: clk, validFor: validFor}
}

// Held reports whether the Lease was acquired or renewed less than validFor ago.
func (f *Fence) Held() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.renewed.IsZero() && f.clock.Since(f.renewed) < f.validFor
}

// lostTo calls OnLost once holder, another replica, is seen holding the Lease while this one,
// which held it, has not renewed it within validFor: another replica can take the Lease only
// after it expired, so this replica has lost it for good.
func (f *Fence) lostTo(holder string) {
	f.mu.Lock()
	fire := f.OnLost != nil && !f.lost && !f.renewed.IsZero() && f.clock.Since(f.renewed) >= f.validFor
	f.lost = f.lost || fire
	f.mu.Unlock()
	if fire {
		f.OnLost(holder)
	}
}

func (f *Fence) renewedAt(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.renewed) {
		f.renewed = t
	}
}

// Lock wraps the Lease lock so every successful Create or Update of the record (acquire,
// renew) moves the fence. The time taken is when the request was sent, not when it returned:
// other replicas count the Lease's duration from no earlier than that.
func (f *Fence) Lock(l resourcelock.Interface) resourcelock.Interface {
	return &lock{Interface: l, f: f}
}

type lock struct {
	resourcelock.Interface
	f *Fence
}

// Get reads the Lease. A replica woken after a freeze past the Lease (SIGSTOP, a stalled node)
// that finds another holder has lost it: client-go's elector would go on trying to renew for a
// whole renew deadline before it gives up, its writes refused by the fence meanwhile; OnLost
// ends that at the first read.
func (l *lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec != nil && rec.HolderIdentity != "" && rec.HolderIdentity != l.Identity() {
		l.f.lostTo(rec.HolderIdentity)
	}
	return rec, raw, err
}

func (l *lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.f.clock.Now()
	if err := l.Interface.Create(ctx, ler); err != nil {
		return err
	}
	l.f.renewedAt(sent)
	return nil
}

func (l *lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.f.clock.Now()
	if err := l.Interface.Update(ctx, ler); err != nil {
		return err
	}
	// A release (an empty holder, on a graceful stop) ends the right to write at once.
	if ler.HolderIdentity == "" {
		l.f.mu.Lock()
		l.f.renewed = time.Time{}
		l.f.mu.Unlock()
	} else {
		l.f.renewedAt(sent)
	}
	return nil
}

// NewLeaseLock builds the Lease lock controller-runtime would build (same identity form:
// hostname_uuid; a client whose requests time out at half the renew deadline), wrapped by the
// fence.
func (f *Fence) NewLeaseLock(cfg *rest.Config, namespace, name string, renewDeadline time.Duration) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = renewDeadline / 2
	rest.AddUserAgent(cfg, "leader-election")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	id := host + "_" + uuid.NewString()
	// "<id> became leader" Events on the Lease, as controller-runtime's own lock records them
	// (core Events: the chart's leader-election Role grants them).
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events(namespace)})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: id})
	l, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		return nil, err
	}
	return f.Lock(l), nil
}

// exempt are the paths of the groups whose writes are questions, not changes (the RBAC
// self-check's SelfSubjectAccessReviews, token and access reviews): every replica may ask them.
var exempt = []string{"/apis/authorization.k8s.io/", "/apis/authentication.k8s.io/"}

// WrapTransport wraps rt (as rest.Config.Wrap does) so that it refuses every write request
// while the fence is not held: the check runs as the request is handed to the network, after
// client-go's rate limiter and for each retry, so a write that waited (or a process that froze)
// in the client past the renew deadline is not sent. Every client built from a config wrapped
// with it is fenced, the Event recorder's included. Reads, and the review requests of the exempt
// groups, always pass.
func (f *Fence) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &transport{base: rt, f: f}
}

type transport struct {
	base http.RoundTripper
	f    *Fence
}

// WrappedRoundTripper lets apimachinery's helpers (utilnet.TLSClientConfig, DialerFor,
// CloseIdleConnectionsFor) reach the transport below, as client-go's own wrappers do.
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.base }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return t.base.RoundTrip(req) // reads, watches
	}
	if !t.f.Held() && !slices.ContainsFunc(exempt, func(p string) bool { return strings.HasPrefix(req.URL.Path, p) }) {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper must close the body, even on error
		}
		return nil, ErrLeaseLost
	}
	return t.base.RoundTrip(req)
}
