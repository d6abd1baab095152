package leaderfence

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// apiServer records the requests it receives and answers each with a ConfigMap (a review with a
// review).
type apiServer struct {
	mu       sync.Mutex
	received []string
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.received = append(s.received, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns"}}`)
	if strings.Contains(r.URL.Path, "selfsubjectaccessreviews") {
		body = []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	}
	if r.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
	}
	_, _ = w.Write(body)
}

func (s *apiServer) writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.received {
		if !strings.HasPrefix(r, http.MethodGet) {
			out = append(out, r)
		}
	}
	return out
}

// slowLimiter is client-go's rate limiter as a loaded manager sees it: each request waits in it,
// and while it waits (or the process is frozen) the clock passes the renew deadline.
type slowLimiter struct {
	flowcontrol.RateLimiter
	wait func()
}

func (l slowLimiter) Wait(context.Context) error { l.wait(); return nil }

// The fence is checked where the request leaves the process, not where a controller calls the
// client: a write that entered the client while the Lease was held, then waited in client-go's
// rate limiter past the renew deadline, is not sent. A check where a controller calls the client
// would let exactly that write through.
func TestAWriteDelayedInTheClientPastTheRenewDeadlineIsNotSent(t *testing.T) {
	const renewDeadline = 10 * time.Second
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	f := New(clk, renewDeadline)
	_ = f.Lock(&fakeLock{}).Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	srv := &apiServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	var delay time.Duration // how long each request waits in the limiter
	cfg := &rest.Config{Host: ts.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}, RateLimiter: slowLimiter{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter(), wait: func() { clk.Step(delay) }}}
	cfg.Wrap(f.WrapTransport) // as the manager wires it
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), meta.RESTScopeRoot)
	c, err := client.New(cfg, client.Options{HTTPClient: hc, Scheme: scheme.Scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}

	delay = time.Second
	if err := c.Create(ctx, cm("in-time")); err != nil {
		t.Fatalf("a write 1 s after the renewal: %v", err)
	}
	if got := srv.writes(); len(got) != 1 {
		t.Fatalf("writes received %v, want the one sent in time", got)
	}

	delay = renewDeadline // the request waits in the client until the deadline has passed
	if err := c.Create(ctx, cm("late")); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("a write that waited past the renew deadline: %v, want %v", err, ErrLeaseLost)
	}
	if got := srv.writes(); len(got) != 1 {
		t.Errorf("writes received %v: the one delayed past the renew deadline reached the API server", got)
	}
	delay = 0
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm("cm")), &got); err != nil {
		t.Errorf("a read after the deadline: %v", err)
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets"}}}
	if err := c.Create(ctx, review); errors.Is(err, ErrLeaseLost) {
		t.Errorf("a SelfSubjectAccessReview after the deadline was refused")
	}
	// A renewal lets writes through again.
	_ = f.Lock(&fakeLock{}).Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	if err := c.Create(ctx, cm("renewed")); err != nil {
		t.Errorf("a write after a renewal: %v", err)
	}
	if got := srv.writes(); len(got) != 3 {
		t.Errorf("writes received %v, want in-time, the review and renewed", got)
	}
}

// The fence's transport hides nothing of the one it wraps from apimachinery's helpers, which
// unwrap a transport to find its TLS config, dialer and idle connections.
func TestTheFencedTransportUnwraps(t *testing.T) {
	tlsConfig := &tls.Config{ServerName: "api", MinVersion: tls.VersionTLS12}
	fenced := New(clocktesting.NewFakePassiveClock(time.Now()), time.Minute).WrapTransport(&http.Transport{TLSClientConfig: tlsConfig})
	if got, err := utilnet.TLSClientConfig(fenced); err != nil || got != tlsConfig {
		t.Errorf("TLSClientConfig of the fenced transport = %v, %v; want the wrapped transport's", got, err)
	}
}
