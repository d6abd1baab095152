package chart

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The chart's FlowSchemas beside a platform team's own, on a real kube-apiserver (envtest's, with
// API Priority and Fairness on as in every cluster): which schema a request of the manager
// matches is what the API server says in the X-Kubernetes-PF-FlowSchema-UID header of its answer.
// docs/chart.md "API fairness" states the rules this checks.

// teamSchema is a platform team's FlowSchema for every ServiceAccount of the cluster, with a
// priority level of its own.
const teamSchema = "team-service-accounts"

func teamFlowObjects(precedence int32) (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "team-workloads"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](30),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: teamSchema},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl.Name},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:serviceaccounts"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"},
				}},
			}},
		},
	}
	return pl, fs
}

// matchedSchema sends GET path as a ServiceAccount and returns the name of the FlowSchema the API
// server classified it by. RBAC may refuse the request: it is classified before authorization.
func matchedSchema(t *testing.T, ctx context.Context, cfg *rest.Config, admin client.Client, namespace, serviceAccount, path string) string {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	uid := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
	var schemas flowcontrolv1.FlowSchemaList
	if err := admin.List(ctx, &schemas); err != nil {
		t.Fatal(err)
	}
	for _, fs := range schemas.Items {
		if string(fs.UID) == uid {
			return fs.Name
		}
	}
	return fmt.Sprintf("(no FlowSchema with UID %q)", uid)
}

// eventuallyMatches waits until a request is classified by want: the API server reads new or
// changed FlowSchemas asynchronously.
func eventuallyMatches(t *testing.T, what, want string, get func() string) {
	t.Helper()
	var got string
	if wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		got = get()
		return got == want, nil
	}) != nil {
		t.Errorf("%s: matched FlowSchema %s, want %s", what, got, want)
	}
}

func TestFlowSchemasBesideAPlatformTeamsOwn(t *testing.T) {
	cfg := startAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	admin, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The team's schema first, at a precedence below the chart's (1000): it was there before the chart.
	pl, team := teamFlowObjects(500)
	for _, o := range []client.Object{pl, team} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	r, err := render(t, loadChart(t), releaseName, parseValues(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range r.objects {
		switch o.(type) {
		case *flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration:
			if err := admin.Create(ctx, o.(client.Object)); err != nil {
				t.Fatal(err)
			}
		}
	}
	manager := func(path string) func() string {
		return func() string { return matchedSchema(t, ctx, cfg, admin, namespace, releaseName, path) }
	}
	other := func() string {
		return matchedSchema(t, ctx, cfg, admin, "team-a", "builder", "/api/v1/namespaces/team-a/configmaps")
	}
	configMaps := "/api/v1/namespaces/team-a/configmaps"
	lease := "/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases/x"
	setTeamPrecedence := func(p int32) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"matchingPrecedence":%d}}`, p))
		if err := admin.Patch(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: teamSchema}}, patch); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a team schema with a lower matchingPrecedence takes the manager's requests", func(t *testing.T) {
		eventuallyMatches(t, "the manager's list of ConfigMaps", teamSchema, manager(configMaps))
		eventuallyMatches(t, "the manager's Lease request", teamSchema, manager(lease))
		eventuallyMatches(t, "another ServiceAccount", teamSchema, other)
	})
	t.Run("with a higher matchingPrecedence the chart's schemas take the manager's, the team's the rest", func(t *testing.T) {
		setTeamPrecedence(5000)
		eventuallyMatches(t, "the manager's list of ConfigMaps", releaseName, manager(configMaps))
		eventuallyMatches(t, "the manager's Lease request in its namespace", releaseName+"-leader-election", manager(lease))
		eventuallyMatches(t, "another ServiceAccount", teamSchema, other)
	})
	t.Run("at 999, tied with the chart's Lease schema: the Lease stays the chart's (the smaller name wins), the rest is the team's", func(t *testing.T) {
		setTeamPrecedence(999)
		// Equal precedence (999): the lexicographically smaller name wins, and
		// "platform-operators-leader-election" < "team-service-accounts".
		eventuallyMatches(t, "the manager's Lease request", releaseName+"-leader-election", manager(lease))
		eventuallyMatches(t, "the manager's list of ConfigMaps", teamSchema, manager(configMaps))
	})
	t.Run("with the chart's objects gone (flowControl.enabled=false) the team's takes the manager's again", func(t *testing.T) {
		setTeamPrecedence(5000)
		for _, o := range r.objects {
			switch o.(type) {
			case *flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration:
				if err := admin.Delete(ctx, o.(client.Object)); err != nil {
					t.Fatal(err)
				}
			}
		}
		eventuallyMatches(t, "the manager's list of ConfigMaps", teamSchema, manager(configMaps))
		if err := admin.Delete(ctx, team); err != nil {
			t.Fatal(err)
		}
		// Without the team's either: the built-in schema for every ServiceAccount.
		eventuallyMatches(t, "the manager's list of ConfigMaps with no schema of the team's", "service-accounts", manager(configMaps))
	})
}
