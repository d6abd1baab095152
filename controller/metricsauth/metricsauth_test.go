package metricsauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReviews knows tokens by user name and which users may get which path; it counts reviews.
type fakeReviews struct {
	users   map[string]string // token -> user name
	allowed map[string]string // user name -> path allowed for get
	fail    error
	authn   int
	authz   int
}

func (f *fakeReviews) Authenticate(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	f.authn++
	if f.fail != nil {
		return authenticationv1.UserInfo{}, false, f.fail
	}
	name, ok := f.users[token]
	return authenticationv1.UserInfo{Username: name}, ok, nil
}

func (f *fakeReviews) Authorize(_ context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error) {
	f.authz++
	return verb == "get" && f.allowed[user.Username] == path, nil
}

func newFake() *fakeReviews {
	return &fakeReviews{
		users:   map[string]string{"scraper-token": "scraper", "nobody-token": "nobody"},
		allowed: map[string]string{"scraper": "/metrics"},
	}
}

func serve(t *testing.T, g *Guard, method, path, authorization string) int {
	t.Helper()
	h := g.Wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestGuardAnswers(t *testing.T) {
	cases := []struct {
		name          string
		method, path  string
		authorization string
		want          int
		wantReviews   int
	}{
		{name: "no Authorization header is 401 without asking the API server", method: "GET", path: "/metrics", want: 401},
		{name: "a Basic header is 401 without asking", method: "GET", path: "/metrics", authorization: "Basic c2NyYXBlcjp4", want: 401},
		{name: "an empty bearer token is 401 without asking", method: "GET", path: "/metrics", authorization: "Bearer ", want: 401},
		{name: "a token the API server does not accept is 401", method: "GET", path: "/metrics", authorization: "Bearer made-up", want: 401, wantReviews: 1},
		{name: "a user without the role is 403", method: "GET", path: "/metrics", authorization: "Bearer nobody-token", want: 403, wantReviews: 2},
		{name: "the scraper may get /metrics", method: "GET", path: "/metrics", authorization: "Bearer scraper-token", want: 200, wantReviews: 2},
		{name: "the scheme is case-insensitive", method: "GET", path: "/metrics", authorization: "bearer scraper-token", want: 200, wantReviews: 2},
		{name: "the scraper may not get another path", method: "GET", path: "/debug", authorization: "Bearer scraper-token", want: 403, wantReviews: 2},
		{name: "HEAD is reviewed as get", method: "HEAD", path: "/metrics", authorization: "Bearer scraper-token", want: 200, wantReviews: 2},
		{name: "POST is 405 without asking", method: "POST", path: "/metrics", authorization: "Bearer scraper-token", want: 405},
		{name: "a made-up method is 405 without asking", method: "PROPFIND", path: "/metrics", authorization: "Bearer scraper-token", want: 405},
		{name: "a path over MaxPathBytes is 414 without asking", method: "GET", path: "/" + strings.Repeat("m", MaxPathBytes), authorization: "Bearer scraper-token", want: 414},
		{name: "a token over MaxTokenBytes is 401 without asking", method: "GET", path: "/metrics", authorization: "Bearer " + strings.Repeat("t", MaxTokenBytes+1), want: 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			g := NewGuard(f, clocktesting.NewFakeClock(time.Unix(0, 0)))
			if got := serve(t, g, tc.method, tc.path, tc.authorization); got != tc.want {
				t.Errorf("code = %d, want %d", got, tc.want)
			}
			if f.authn+f.authz != tc.wantReviews {
				t.Errorf("reviews = %d authn + %d authz, want %d in all", f.authn, f.authz, tc.wantReviews)
			}
		})
	}
}

// A scraper every few seconds must not cost two reviews per scrape, and a revoked binding or a
// new one must take effect within the cache's time.
func TestGuardRemembersDecisionsForAShortTime(t *testing.T) {
	f := newFake()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	g := NewGuard(f, clock)
	for i := 0; i < 5; i++ {
		if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 200 {
			t.Fatalf("scrape %d: %d", i, got)
		}
		if got := serve(t, g, "GET", "/metrics", "Bearer nobody-token"); got != 403 {
			t.Fatalf("refused scrape %d: %d", i, got)
		}
	}
	if f.authn != 2 || f.authz != 2 {
		t.Fatalf("reviews after 10 requests by 2 tokens = %d/%d, want 2/2", f.authn, f.authz)
	}

	// nobody is granted the role; scraper loses it. The refusal is asked again after 30 s, the
	// grant after a minute.
	f.allowed = map[string]string{"nobody": "/metrics"}
	clock.Step(denyTTL + time.Second)
	if got := serve(t, g, "GET", "/metrics", "Bearer nobody-token"); got != 200 {
		t.Errorf("a user granted the role 31 s ago: %d, want 200", got)
	}
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 200 {
		t.Errorf("within the minute the grant is still remembered: %d, want 200", got)
	}
	clock.Step(allowTTL)
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 403 {
		t.Errorf("a user whose role went away over a minute ago: %d, want 403", got)
	}
}

// An API server that cannot answer is a 500, and the failure is not remembered: the next scrape
// asks again and gets through once the API server is back.
func TestGuardDoesNotRememberFailedReviews(t *testing.T) {
	f := newFake()
	f.fail = errors.New("connection refused")
	g := NewGuard(f, clocktesting.NewFakeClock(time.Unix(0, 0)))
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 500 {
		t.Fatalf("review failed: %d, want 500", got)
	}
	f.fail = nil
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 200 {
		t.Errorf("after the API server came back: %d, want 200", got)
	}
}

// A flood of made-up tokens does not grow any cache past its bound.
func TestGuardCacheIsBounded(t *testing.T) {
	f := newFake()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	g := NewGuard(f, clock)
	for i := 0; i < 3*maxDecisions; i++ {
		clock.Step(time.Second) // within the review rate
		serve(t, g, "GET", "/metrics", fmt.Sprintf("Bearer made-up-%d", i))
		serve(t, g, "GET", fmt.Sprintf("/metrics-%d", i), "Bearer nobody-token")
	}
	for name, c := range map[string]*ttlCache[[32]byte, int]{"allowed": g.allowed, "denied": g.denied, "failed": g.failed, "known": g.known} {
		if n := c.len(); n > maxDecisions {
			t.Errorf("%s holds %d entries, want at most %d", name, n, maxDecisions)
		}
	}
}

// Issue 34: 100 requests with random tokens cost 100 TokenReviews. Whatever unauthenticated
// clients send, the guard makes at most ReviewBurst reviews at once and ReviewsPerSecond after;
// the rest are answered 429 without a review.
func TestRandomTokensCostABoundedRateOfReviews(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requests int
		every    time.Duration // between two requests
		// at most this many reviews
		want int
	}{
		{"100 random tokens at once", 100, 0, ReviewBurst},
		{"10,000 random tokens at once", 10000, 0, ReviewBurst},
		{"100 random tokens over 10 s", 100, 100 * time.Millisecond, ReviewBurst + 10*ReviewsPerSecond},
		{"1,000 random tokens over 100 s", 1000, 100 * time.Millisecond, ReviewBurst + 100*ReviewsPerSecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			clock := clocktesting.NewFakeClock(time.Unix(0, 0))
			g := NewGuard(f, clock)
			codes := map[int]int{}
			for i := 0; i < tc.requests; i++ {
				codes[serve(t, g, "GET", "/metrics", fmt.Sprintf("Bearer random-%d", i))]++
				clock.Step(tc.every)
			}
			if f.authn+f.authz > tc.want {
				t.Errorf("%d requests cost %d TokenReviews and %d SubjectAccessReviews, want at most %d in all", tc.requests, f.authn, f.authz, tc.want)
			}
			if codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests] != tc.requests {
				t.Errorf("answers = %v, want only 401 and 429", codes)
			}
			t.Logf("%d requests: %d TokenReviews; answers %v", tc.requests, f.authn, codes)
		})
	}
}

// A token the API server did not accept is remembered by its digest, whatever the path: asking
// again, on any path, costs no review until failedTokenTTL.
func TestAFailedTokenIsRemembered(t *testing.T) {
	f := newFake()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	g := NewGuard(f, clock)
	for i := 0; i < 50; i++ {
		if got := serve(t, g, "GET", fmt.Sprintf("/metrics/%d", i), "Bearer made-up"); got != 401 {
			t.Fatalf("request %d: %d, want 401", i, got)
		}
	}
	if f.authn != 1 {
		t.Errorf("50 requests with one bad token on 50 paths cost %d TokenReviews, want 1", f.authn)
	}
	clock.Step(failedTokenTTL + time.Second)
	serve(t, g, "GET", "/metrics", "Bearer made-up")
	if f.authn != 2 {
		t.Errorf("after %v the token is asked about again: %d TokenReviews, want 2", failedTokenTTL, f.authn)
	}
}

// A flood of random tokens spends the review rate, but the scraper, allowed before, keeps
// scraping when its decision expires: its re-review is outside the rate.
func TestAFloodDoesNotLockTheScraperOut(t *testing.T) {
	f := newFake()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	g := NewGuard(f, clock)
	if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 200 {
		t.Fatalf("first scrape: %d", got)
	}
	for minute := 1; minute <= 5; minute++ {
		for i := 0; i < 1000; i++ {
			serve(t, g, "GET", "/metrics", fmt.Sprintf("Bearer flood-%d-%d", minute, i))
		}
		clock.Step(allowTTL + time.Millisecond) // the scraper's decision expires; the bucket refills a little
		for i := 0; i < 1000; i++ {
			serve(t, g, "GET", "/metrics", fmt.Sprintf("Bearer flood2-%d-%d", minute, i))
		}
		if got := serve(t, g, "GET", "/metrics", "Bearer scraper-token"); got != 200 {
			t.Fatalf("minute %d, during the flood: scrape answered %d, want 200", minute, got)
		}
	}
	// A scraper's new token (rotation) is asked about once the rate allows it: 429 meanwhile.
	if got := serve(t, g, "GET", "/metrics", "Bearer new-scraper-token"); got != http.StatusTooManyRequests {
		t.Errorf("a new token while the rate is spent: %d, want 429", got)
	}
	clock.Step(time.Second)
	f.users["new-scraper-token"] = "scraper"
	if got := serve(t, g, "GET", "/metrics", "Bearer new-scraper-token"); got != 200 {
		t.Errorf("a new token a second later: %d, want 200", got)
	}
}

// A 429 tells the client when to come back.
func TestTooManyRequestsSaysWhenToComeBack(t *testing.T) {
	g := NewGuard(newFake(), clocktesting.NewFakeClock(time.Unix(0, 0)))
	h := g.Wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	var rec *httptest.ResponseRecorder
	for i := 0; i <= ReviewBurst; i++ {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", fmt.Sprintf("Bearer r-%d", i))
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("request %d: %d Retry-After %q, want 429 with Retry-After 1", ReviewBurst+1, rec.Code, rec.Header().Get("Retry-After"))
	}
}

// serveFrom is serve from the source address addr (host:port).
func serveFrom(t *testing.T, g *Guard, addr, method, path, authorization string) int {
	t.Helper()
	h := g.Wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = addr
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// Issue 45: a flood of made-up tokens from one pod spent the one review budget, and a token
// never seen before (a rotated scraper token, the first scrape after a restart) got 429 while it
// lasted. Each source has its own budget: the flooder spends its own.
func TestAFreshTokenIsServedDuringAFloodFromAnotherSource(t *testing.T) {
	f := newFake()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	g := NewGuard(f, clock)
	codes := map[int]int{}
	for second := 0; second < 60; second++ {
		for i := 0; i < 10; i++ { // 10 made-up tokens a second, as in the issue
			codes[serveFrom(t, g, "10.0.0.66:40000", "GET", "/metrics", fmt.Sprintf("Bearer flood-%d-%d", second, i))]++
		}
		if second%20 == 10 {
			token := fmt.Sprintf("rotated-%d", second)
			f.users[token] = "scraper"
			if got := serveFrom(t, g, "10.0.0.7:51000", "GET", "/metrics", "Bearer "+token); got != 200 {
				t.Errorf("second %d of the flood: a fresh valid token from the scraper's address answered %d, want 200", second, got)
			}
		}
		clock.Step(time.Second)
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("the flood was never limited: %v", codes)
	}
	if most := ReviewBurst + 60*ReviewsPerSecond + 3*2; f.authn+f.authz > most {
		t.Errorf("the flood cost %d reviews, want at most %d", f.authn+f.authz, most)
	}
}

// Many sources together are still bounded by the global budget.
func TestManySourcesShareTheGlobalBudget(t *testing.T) {
	f := newFake()
	g := NewGuard(f, clocktesting.NewFakeClock(time.Unix(0, 0)))
	for i := 0; i < 500; i++ {
		serveFrom(t, g, fmt.Sprintf("10.1.%d.%d:1000", i/250, i%250), "GET", "/metrics", fmt.Sprintf("Bearer m-%d", i))
	}
	if f.authn > GlobalReviewBurst {
		t.Errorf("500 sources at once cost %d TokenReviews, want at most %d", f.authn, GlobalReviewBurst)
	}
}

// Issue 45: any method reached the guard and was kept in its keys; 100 requests with 1 MiB
// methods raised the heap by 100 MiB for good. Now they are refused before review or memory.
func TestTheHeapStaysFlatUnderHugeMethodsAndPaths(t *testing.T) {
	f := newFake()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	g := NewGuard(f, clock)
	h := g.Wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	// Built directly (httptest.NewRequest parses a request line of 1 MiB slowly under -race).
	do := func(method, path, token string) int {
		req := &http.Request{Method: method, URL: &url.URL{Path: path}, Header: http.Header{"Authorization": {"Bearer " + token}}, RemoteAddr: "10.0.0.9:4000"}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := 0; i < 100; i++ {
		clock.Step(time.Second)
		reviews := f.authn + f.authz
		method := strings.Repeat(string(rune('A'+i%26)), 1<<20) // a new 1 MiB method each time
		if got := do(method, "/metrics", "nobody-token"); got != http.StatusMethodNotAllowed {
			t.Fatalf("a 1 MiB method: %d, want 405", got)
		}
		if got := do("GET", "/"+method, "nobody-token"); got != http.StatusRequestURITooLong {
			t.Fatalf("a 1 MiB path: %d, want 414", got)
		}
		if got := do("GET", "/metrics", "t"+method); got != http.StatusUnauthorized {
			t.Fatalf("a 1 MiB token: %d, want 401", got)
		}
		if n := f.authn + f.authz - reviews; n != 0 {
			t.Fatalf("a 1 MiB method, path or token cost %d reviews, want none", n)
		}
	}
	after := heap()
	grown := int64(after) - int64(before)
	t.Logf("heap %d -> %d bytes after 100 requests each with a 1 MiB method, path and token (guard bound %d bytes)", before, after, MaxBytes)
	if grown > 1<<20 {
		t.Errorf("the heap grew by %d bytes, want under 1 MiB", grown)
	}
}

// An expired decision leaves the cache on the next write, not only when it is read again or
// pushed out by count.
func TestExpiredDecisionsLeaveOnWrite(t *testing.T) {
	f := newFake()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	g := NewGuard(f, clock)
	for i := 0; i < ReviewBurst; i++ {
		serve(t, g, "GET", fmt.Sprintf("/p/%d", i), "Bearer nobody-token")
	}
	if n := g.denied.len(); n != ReviewBurst {
		t.Fatalf("denied holds %d, want %d", n, ReviewBurst)
	}
	clock.Step(denyTTL)
	serve(t, g, "GET", "/other", "Bearer nobody-token")
	if n := g.denied.len(); n != 1 {
		t.Errorf("after denyTTL and one write, denied holds %d entries, want 1", n)
	}
}

// The memory bound the guard declares (MaxBytes) holds for full caches: fill every cache and
// every source budget, and weigh the heap.
func TestAFullGuardWeighsUnderMaxBytes(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	g := NewGuard(newFake(), clocktesting.NewFakeClock(time.Unix(0, 0)))
	now := time.Unix(0, 0)
	for i := 0; i < maxDecisions; i++ {
		var k [32]byte
		k[0], k[1] = byte(i), byte(i>>8)
		for _, c := range []*ttlCache[[32]byte, int]{g.allowed, g.denied, g.failed, g.known} {
			c.add(k, 200, now)
		}
	}
	for i := 0; i < maxSources; i++ {
		g.sources.add(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), rate.NewLimiter(1, 1), now)
	}
	after := heap()
	runtime.KeepAlive(g)
	used := int64(after) - int64(before)
	t.Logf("a full guard: %d bytes on the heap, declared %d", used, MaxBytes)
	if used > MaxBytes {
		t.Errorf("a full guard takes %d bytes, more than MaxBytes %d", used, MaxBytes)
	}
}

// len is the number of entries held, expired or not.
func (c *ttlCache[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
