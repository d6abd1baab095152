package permissions

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"sigs.k8s.io/yaml"
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

// Manager names the needs of the manager itself (its own markers in controller/cmd/manager, such
// as Events): they are checked whenever any controller runs.
const Manager = "manager"

// roles holds what `make manifests` generates from the +kubebuilder:rbac markers: one ClusterRole
// per controller package (roles/<controller>/role.yaml) and one of the manager's own markers
// (roles/manager/role.yaml). The chart's ClusterRole (files/rbac/role.yaml) is generated from the
// same markers, so the self-check asks exactly what the chart grants; `make verify` fails when
// either is stale.
//
//go:embed roles/*/role.yaml
var roles embed.FS

// Rules returns the generated rules of each controller (and of Manager), by name.
func Rules() (map[string][]rbacv1.PolicyRule, error) {
	dirs, err := fs.ReadDir(roles, "roles")
	if err != nil {
		return nil, err
	}
	out := make(map[string][]rbacv1.PolicyRule, len(dirs))
	for _, d := range dirs {
		data, err := roles.ReadFile(path.Join("roles", d.Name(), "role.yaml"))
		if err != nil {
			return nil, err
		}
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(data, &role); err != nil {
			return nil, fmt.Errorf("roles/%s/role.yaml: %w", d.Name(), err)
		}
		out[d.Name()] = role.Rules
	}
	return out, nil
}

// ScopeFunc tells whether a resource lives in namespaces (the API server's discovery knows).
type ScopeFunc func(group, resource string) (namespaced bool, err error)

// NeedsFromRules turns generated rules into needs, one per group, resource and verb, in the order
// of the rules. Subresources ("ats/status") take their resource's scope.
func NeedsFromRules(rules []rbacv1.PolicyRule, namespaced ScopeFunc) ([]Need, error) {
	var out []Need
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			return nil, fmt.Errorf("rule %v: only resource rules without resourceNames can be checked", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				ns, err := namespaced(g, resource)
				if err != nil {
					return nil, fmt.Errorf("scope of %s.%s: %w", resource, g, err)
				}
				for _, v := range r.Verbs {
					out = append(out, Need{Group: g, Resource: resource, Subresource: sub, Verb: v, Namespaced: ns})
				}
			}
		}
	}
	return out, nil
}

// ByController returns the needs of every controller with a generated role, and of Manager.
func ByController(namespaced ScopeFunc) (map[string][]Need, error) {
	rules, err := Rules()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]Need, len(rules))
	for name, r := range rules {
		if out[name], err = NeedsFromRules(r, namespaced); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return out, nil
}

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

// Expand turns the controllers' needs (byController) into checks. namespaces maps each enabled
// controller (and Manager) to the namespaces it watches (nil or empty: all); a name without needs
// adds no check. A permission two controllers need is checked once.
func Expand(byController map[string][]Need, namespaces map[string][]string) []Check {
	type key struct {
		Need
		ns string
	}
	index := map[key]int{}
	var out []Check
	for _, controller := range slices.Sorted(maps.Keys(namespaces)) {
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
	// A failed check is recorded, not returned: returning it would end the re-checks. The
	// only error PollUntilContextCancel can then return is ctx's, which is a normal stop.
	_ = wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		missing, err := c.Missing(ctx)
		c.record(missing, err)
		return err == nil && len(missing) == 0, nil
	})
	return nil
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
