// Package permissions checks at startup that the manager may do what its enabled controllers
// need, with SelfSubjectAccessReviews, so a missing RBAC rule shows up as one clear log line per
// permission (and a failing readiness check) instead of as reflector errors deep in the logs.
//
// Needs and Expand are pure; Checker talks to the API server.
package permissions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Need is one permission a controller needs.
type Need struct {
	Group, Resource, Subresource, Verb string
	// Namespaced is true for a resource that lives in namespaces: it is checked in each watched
	// namespace (or in all namespaces when the manager watches all).
	Namespaced bool
}

func (n Need) String() string {
	r := n.Resource
	if n.Subresource != "" {
		r += "/" + n.Subresource
	}
	if n.Group != "" {
		r += "." + n.Group
	}
	return n.Verb + " " + r
}

const opsGroup = "ops.platform-operators.io"

func needs(group, resource, sub string, namespaced bool, verbs ...string) []Need {
	out := make([]Need, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, Need{Group: group, Resource: resource, Subresource: sub, Verb: v, Namespaced: namespaced})
	}
	return out
}

// events are what every controller that records Events needs.
var events = needs("", "events", "", true, "create", "patch")

// byController is what each controller does with the API; it mirrors the controllers'
// +kubebuilder:rbac markers (a test checks that the generated role grants all of it).
var byController = map[string][]Need{
	"secretsync": slices.Concat(
		needs(opsGroup, "secretsyncs", "", false, "get", "list", "watch", "create", "update", "patch"),
		needs(opsGroup, "secretsyncs", "status", false, "update", "patch"),
		needs("", "secrets", "", true, "get", "list", "watch", "create", "update", "delete"),
		needs("", "namespaces", "", false, "get", "list", "watch"),
		needs("", "serviceaccounts", "", true, "get", "list", "watch", "patch"),
		events),
	"at": slices.Concat(
		needs(opsGroup, "ats", "", true, "get", "list", "watch"),
		needs(opsGroup, "ats", "status", true, "update", "patch"),
		needs("batch", "jobs", "", true, "get", "list", "watch", "create", "delete"),
		events),
	"scheduledjob": slices.Concat(
		needs(opsGroup, "scheduledjobs", "", true, "get", "list", "watch"),
		needs(opsGroup, "scheduledjobs", "status", true, "update", "patch"),
		needs("batch", "jobs", "", true, "get", "list", "watch", "create", "delete"),
		events),
	"podwatcher": needs("", "pods", "", true, "list", "watch"),
}

// Needs returns what the named controller needs; nil for a controller with no API needs.
func Needs(controller string) []Need { return slices.Clone(byController[controller]) }

// Check is one question to the API server: may the manager do Need in Namespace ("" = all
// namespaces, or a cluster-scoped resource)? Controllers are those that need it.
type Check struct {
	Need
	Namespace   string
	Controllers []string
}

func (c Check) String() string {
	if c.Namespace == "" {
		if c.Namespaced {
			return c.Need.String() + " in all namespaces"
		}
		return c.Need.String()
	}
	return c.Need.String() + " in namespace " + c.Namespace
}

// Expand turns the controllers' needs into checks. namespaces maps each enabled controller to
// the namespaces it watches (nil or empty: all). A permission two controllers need is checked once.
func Expand(namespaces map[string][]string) []Check {
	type key struct {
		Need
		ns string
	}
	index := map[key]int{}
	var out []Check
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range namespaces {
			if !yield(n) {
				return
			}
		}
	})
	for _, controller := range names {
		for _, n := range byController[controller] {
			nss := []string{""}
			if n.Namespaced && len(namespaces[controller]) > 0 {
				nss = namespaces[controller]
			}
			for _, ns := range nss {
				k := key{n, ns}
				if i, ok := index[k]; ok {
					out[i].Controllers = append(out[i].Controllers, controller)
					continue
				}
				index[k] = len(out)
				out = append(out, Check{Need: n, Namespace: ns, Controllers: []string{controller}})
			}
		}
	}
	return out
}

// Checker asks the API server, with SelfSubjectAccessReviews, whether the manager's credentials
// grant every check; it logs each missing permission and reports readiness from the last answer.
// Until all are granted it asks again every Interval, so RBAC fixed after the start is noticed.
type Checker struct {
	Reviews  authorizationv1client.SelfSubjectAccessReviewInterface
	Checks   []Check
	Log      logr.Logger
	Interval time.Duration

	mu      sync.Mutex
	missing []Check
	err     error
	checked bool
}

// Missing asks about every check and returns those that are denied.
func (c *Checker) Missing(ctx context.Context) ([]Check, error) {
	var missing []Check
	for _, ch := range c.Checks {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ch.Namespace, Verb: ch.Verb, Group: ch.Group, Resource: ch.Resource, Subresource: ch.Subresource,
			},
		}}
		got, err := c.Reviews.Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("asking whether the manager may %s: %w", ch, err)
		}
		if !got.Status.Allowed {
			missing = append(missing, ch)
		}
	}
	return missing, nil
}

// Start checks, then re-checks every Interval until everything is granted or ctx ends.
func (c *Checker) Start(ctx context.Context) error {
	interval := c.Interval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	for {
		missing, err := c.Missing(ctx)
		c.record(missing, err)
		if err == nil && len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func (c *Checker) record(missing []Check, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.Log.Error(err, "Cannot check the manager's RBAC permissions")
	case len(missing) == 0 && (len(c.missing) > 0 || !c.checked):
		c.Log.Info("RBAC permissions checked: all granted", "checks", len(c.Checks))
	case !slices.EqualFunc(missing, c.missing, func(a, b Check) bool { return a.String() == b.String() }):
		for _, m := range missing {
			c.Log.Error(nil, "Missing RBAC permission: the controllers that need it cannot work until it is granted",
				"permission", m.String(), "verb", m.Verb, "group", m.Group, "resource", m.Resource,
				"subresource", m.Subresource, "namespace", m.Namespace, "controllers", m.Controllers)
		}
	}
	c.missing, c.err, c.checked = missing, err, err == nil || c.checked
}

// Ready is a readiness check: it fails until the first check answered and while a permission is missing.
func (c *Checker) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.checked && c.err != nil:
		return fmt.Errorf("RBAC permissions not checked: %w", c.err)
	case !c.checked:
		return fmt.Errorf("RBAC permissions not checked yet")
	case len(c.missing) > 0:
		names := make([]string, 0, len(c.missing))
		for _, m := range c.missing {
			names = append(names, m.String())
		}
		return fmt.Errorf("missing RBAC permissions: %s", strings.Join(names, "; "))
	}
	return nil
}
