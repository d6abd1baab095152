package metricsfilter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/platform-operators/platform-operators/controller/metricsauth"
)

// counting counts the reviews that reach the API server through it.
type counting struct {
	next                      http.RoundTripper
	tokenReviews, accessRevws atomic.Int64
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	switch {
	case strings.HasSuffix(req.URL.Path, "/tokenreviews"):
		c.tokenReviews.Add(1)
	case strings.HasSuffix(req.URL.Path, "/subjectaccessreviews"):
		c.accessRevws.Add(1)
	}
	return c.next.RoundTrip(req)
}

// request is one GET the metrics endpoint is sent: a bearer token on a path.
type request struct{ token, path string }

// tokens of the scenarios: a ServiceAccount bound to the chart's metrics-reader rule, one bound to
// nothing.
type tokens struct{ scraper, nobody string }

func madeUp() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "made-up-" + hex.EncodeToString(b)
}

// The same requests through the manager's guard and through controller-runtime's filter, each new
// for each scenario, on one real API server: the TokenReviews and SubjectAccessReviews each makes.
// The guard's bound is issue 34's ("the metrics port costs the manager at most a small bounded rate
// of TokenReviews whatever unauthenticated clients send"): at most ReviewBurst at once, then
// ReviewsPerSecond, and one per made-up token that comes back. controller-runtime's filter does not
// remember a token the API server refused (the API server says why in TokenReview status.error,
// which k8s.io/apiserver's webhook authenticator returns as an error, and errors are not cached):
// every such request is a TokenReview. Its counts are asserted too, so that a controller-runtime
// that starts bounding them fails this test and the choice in docs/architecture.md is made again.
// The numbers are in docs/security.md.
func TestReviewsReachingTheAPIServerGuardVersusControllerRuntime(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make test-go`, which points it at bin/ (built by `make tools`)")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	tok := setUpAccounts(t, cfg)

	const n = 100
	scenarios := []struct {
		name     string
		requests func() []request
		// madeUp is how many requests carry a made-up token; scraper how many the scraper's.
		madeUp, scraper int
		// guardMax* bound the guard's reviews beyond the rate limit's refill while the scenario ran.
		guardMaxTokenReviews, guardMaxAccessReviews int
		refilled                                    bool
		// crTokenReviews and crAccessReviews are controller-runtime's, exactly.
		crTokenReviews, crAccessReviews int
	}{
		{
			name: "100 requests, each with a different made-up token",
			requests: func() []request {
				r := make([]request, n)
				for i := range r {
					r[i] = request{madeUp(), "/metrics"}
				}
				return r
			},
			madeUp: n, guardMaxTokenReviews: metricsauth.ReviewBurst, refilled: true,
			crTokenReviews: n,
		},
		{
			name: "100 requests with one made-up token",
			requests: func() []request {
				t := madeUp()
				r := make([]request, n)
				for i := range r {
					r[i] = request{t, "/metrics"}
				}
				return r
			},
			madeUp: n, guardMaxTokenReviews: 1,
			crTokenReviews: n,
		},
		{
			name: "100 scrapes with the scraper's token",
			requests: func() []request {
				r := make([]request, n)
				for i := range r {
					r[i] = request{tok.scraper, "/metrics"}
				}
				return r
			},
			scraper: n, guardMaxTokenReviews: 1, guardMaxAccessReviews: 1,
			crTokenReviews: 1, crAccessReviews: 1,
		},
		{
			name: "100 requests with a real token without the role, each on a different path",
			requests: func() []request {
				r := make([]request, n)
				for i := range r {
					r[i] = request{tok.nobody, fmt.Sprintf("/metrics/%d", i)}
				}
				return r
			},
			guardMaxTokenReviews: metricsauth.ReviewBurst, guardMaxAccessReviews: metricsauth.ReviewBurst, refilled: true,
			crTokenReviews: 1, crAccessReviews: n,
		},
		{
			name: "1,000 made-up tokens with a scrape every 10th request",
			requests: func() []request {
				r := make([]request, 10*n)
				for i := range r {
					r[i] = request{madeUp(), "/metrics"}
					if i%10 == 0 {
						r[i] = request{tok.scraper, "/metrics"}
					}
				}
				return r
			},
			madeUp: 9 * n, scraper: n,
			guardMaxTokenReviews: metricsauth.ReviewBurst, guardMaxAccessReviews: 1, refilled: true,
			crTokenReviews: 9*n + 1, crAccessReviews: 1,
		},
	}
	type filter struct {
		name string
		new  func(*rest.Config, *http.Client) (metricsserver.Filter, error)
	}
	guard := filter{"controller/metricsauth", metricsauth.Filter}
	cr := filter{"controller-runtime filters.WithAuthenticationAndAuthorization", filters.WithAuthenticationAndAuthorization}
	t.Logf("| requests | filter | TokenReviews | SubjectAccessReviews | answers | scraper's answers | took |")
	t.Logf("|---|---|---|---|---|---|---|")
	for _, sc := range scenarios {
		reqs := sc.requests()
		for _, f := range []filter{guard, cr} {
			t.Run(sc.name+"/"+f.name, func(t *testing.T) {
				res := run(t, cfg, f.new, reqs, tok.scraper)
				t.Logf("| %s | %s | %d | %d | %s | %s | %s |", sc.name, f.name, res.tokenReviews, res.accessReviews,
					res.codes, res.scraperCodes, res.took.Round(time.Millisecond))
				if res.scraperCodes.total() != sc.scraper || res.codes.total() != len(reqs) {
					t.Fatalf("counted %d answers (%d to the scraper), sent %d (%d)", res.codes.total(), res.scraperCodes.total(), len(reqs), sc.scraper)
				}
				if res.scraperCodes[http.StatusOK] != sc.scraper {
					t.Errorf("the scraper was answered %s, want 200 to all %d", res.scraperCodes, sc.scraper)
				}
				if f.name == cr.name {
					if res.tokenReviews != sc.crTokenReviews || res.accessReviews != sc.crAccessReviews {
						t.Errorf("controller-runtime's filter made %d TokenReviews and %d SubjectAccessReviews, expected %d and %d: "+
							"if it now bounds what made-up tokens cost, docs/architecture.md's reason for the guard is gone",
							res.tokenReviews, res.accessReviews, sc.crTokenReviews, sc.crAccessReviews)
					}
					return
				}
				// The guard: the burst, plus what the limiter refilled while the requests ran.
				extra := 0
				if sc.refilled {
					extra = int(math.Ceil(res.took.Seconds() * metricsauth.ReviewsPerSecond))
				}
				if res.tokenReviews > sc.guardMaxTokenReviews+extra || res.accessReviews > sc.guardMaxAccessReviews+extra {
					t.Errorf("the guard made %d TokenReviews and %d SubjectAccessReviews in %s, want at most %d and %d",
						res.tokenReviews, res.accessReviews, res.took, sc.guardMaxTokenReviews+extra, sc.guardMaxAccessReviews+extra)
				}
				if sc.madeUp > 0 && res.codes[http.StatusOK] != sc.scraper {
					t.Errorf("the guard let %d requests through, want the scraper's %d only", res.codes[http.StatusOK], sc.scraper)
				}
			})
		}
	}
}

// codes counts answers by status code.
type codes map[int]int

func (c codes) total() int {
	s := 0
	for _, v := range c {
		s += v
	}
	return s
}

func (c codes) String() string {
	if len(c) == 0 {
		return "none"
	}
	keys := make([]int, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d×%d", c[k], k))
	}
	return strings.Join(parts, ", ")
}

type result struct {
	tokenReviews, accessReviews int
	codes, scraperCodes         codes
	took                        time.Duration
}

// run sends reqs one after another to a handler behind a new filter built by newFilter, whose
// reviews go through a counting transport.
func run(t *testing.T, cfg *rest.Config, newFilter func(*rest.Config, *http.Client) (metricsserver.Filter, error), reqs []request, scraper string) result {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{next: hc.Transport}
	hc.Transport = c
	f, err := newFilter(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	h, err := f(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	if err != nil {
		t.Fatal(err)
	}
	res := result{codes: codes{}, scraperCodes: codes{}}
	start := time.Now()
	for _, r := range reqs {
		req := httptest.NewRequest(http.MethodGet, r.path, nil)
		req.Header.Set("Authorization", "Bearer "+r.token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		res.codes[w.Code]++
		if r.token == scraper {
			res.scraperCodes[w.Code]++
		}
	}
	res.took = time.Since(start)
	res.tokenReviews, res.accessReviews = int(c.tokenReviews.Load()), int(c.accessRevws.Load())
	return res
}

// setUpAccounts creates the scraper's ServiceAccount, bound to the chart's metrics-reader rule,
// and one bound to nothing, and returns a token of each.
func setUpAccounts(t *testing.T, cfg *rest.Config) tokens {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "default"
	for _, name := range []string{"scraper", "nobody"} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The rule of the chart's metrics-reader ClusterRole (templates/metrics-rbac.yaml).
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	// RBAC answers from its informers' caches: wait until the binding is seen, so that no scenario's
	// first scrape is refused (and the refusal remembered).
	var sarErr error
	if wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var sar *authorizationv1.SubjectAccessReview
		sar, sarErr = cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + ns + ":scraper", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}, metav1.CreateOptions{})
		return sarErr == nil && sar.Status.Allowed, nil
	}) != nil {
		t.Fatalf("the scraper's binding never took effect: %v", sarErr)
	}
	return tokens{scraper: token("scraper"), nobody: token("nobody")}
}
