package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// e2eRegistry is the registry of the chart's pull secret: a name only on kwok (nothing is pulled),
// the test bed's registry on kind, where every image of the suite is pulled with it (setKindValues).
var e2eRegistry = "harbor.example.com"

// pullSecretSource is the pull secret's namespace: the chart's default source namespace
// (secretSync.default.sourceNamespace). The manager's pods never pull with it (managerPullSecret).
const pullSecretSource = "secretsync"

const (
	e2ePullSecret = "harbor-robot"
	// A Harbor robot account and a secret with the characters a shell or a careless template mangles.
	e2eRobot       = "robot$platform+e2e"
	e2eRobotSecret = `s3"cr$t\x`
	pullSecretNS   = "e2e-pullsecret-tenant"
	// The SecretSync that spreads the pull secret.
	pullSecretSync = releaseName + "-pull-secret"
)

// robotAuth decodes the credentials for e2eRegistry from a dockerconfigjson Secret.
func robotAuth(s *corev1.Secret) (user, password, auth string, err error) {
	var cfg struct {
		Auths map[string]struct{ Username, Password, Auth string }
	}
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
		return "", "", "", fmt.Errorf("%s/%s: %w", s.Namespace, s.Name, err)
	}
	a, ok := cfg.Auths[e2eRegistry]
	if !ok {
		return "", "", "", fmt.Errorf("%s/%s has no auth for %s", s.Namespace, s.Name, e2eRegistry)
	}
	dec, err := base64.StdEncoding.DecodeString(a.Auth)
	return a.Username, a.Password, string(dec), err
}

func TestPullSecret(t *testing.T) {
	// With E2E_RBAC_SCOPE=namespaced pullSecretNS is one of rbac.namespaces (and the pull secret's
	// namespace, secretsync, is added by the chart): the same assertions hold.
	f := features.New("the chart's Harbor pull secret reaches tenant namespaces").
		Assess("the chart installed the robot account byte-exact", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := &corev1.Secret{}
			if err := ctrlClient(t, cfg).Get(ctx, types.NamespacedName{Namespace: pullSecretSource, Name: e2ePullSecret}, s); err != nil {
				t.Fatal(err)
			}
			user, pass, auth, err := robotAuth(s)
			if err != nil {
				t.Fatal(err)
			}
			if s.Type != corev1.SecretTypeDockerConfigJson || user != e2eRobot || pass != e2eRobotSecret || auth != e2eRobot+":"+e2eRobotSecret {
				t.Errorf("type %s, user %q, password %q, auth %q; want %s, %q, %q", s.Type, user, pass, auth, corev1.SecretTypeDockerConfigJson, e2eRobot, e2eRobotSecret)
			}
			return ctx
		}).
		Assess("the manager keeps the pull secret's SecretSync applied", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			eventually(ctx, t, "SecretSync "+pullSecretSync, func(ctx context.Context) error {
				ss := &v1alpha1.SecretSync{}
				if err := c.Get(ctx, types.NamespacedName{Name: pullSecretSync}, ss); err != nil {
					return err
				}
				if ss.Spec.Source.Namespace != pullSecretSource || ss.Spec.Source.Name != e2ePullSecret || len(ss.Spec.ImagePullSecretFor) != 1 || ss.Spec.ImagePullSecretFor[0] != "default" {
					return fmt.Errorf("spec = %+v", ss.Spec)
				}
				return nil
			})
			return ctx
		}).
		Assess("a new namespace gets the copy and its default ServiceAccount lists it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			eventually(ctx, t, "the copy in "+pullSecretNS, func(ctx context.Context) error {
				s := &corev1.Secret{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: pullSecretNS, Name: e2ePullSecret}, s); err != nil {
					return err
				}
				user, pass, _, err := robotAuth(s)
				if err != nil {
					return err
				}
				if user != e2eRobot || pass != e2eRobotSecret {
					return fmt.Errorf("copy has user %q password %q", user, pass)
				}
				return nil
			})
			eventually(ctx, t, "the default ServiceAccount pulls with the copy", func(ctx context.Context) error {
				return pullsWith(ctx, c, pullSecretNS, "default", e2ePullSecret)
			})
			return ctx
		})
	testenv.Test(t, withNamespace(f, pullSecretNS).Feature())
}
