package tenantconfig

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RequestToken asks the API server for a token of the ServiceAccount (TokenRequest) valid for
// ttl. The server may shorten the lifetime (--service-account-max-token-expiration).
func RequestToken(ctx context.Context, cs kubernetes.Interface, namespace, sa string, ttl time.Duration) (string, error) {
	secs := int64(ttl.Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, sa, err)
	}
	return tr.Status.Token, nil
}

// SecretToken reads the long-lived token of the ServiceAccount from its
// `kubernetes.io/service-account-token` Secret. The token controller fills the Secret shortly
// after it is created, so an empty one is polled until timeout. A Secret of another type, or one
// annotated for another ServiceAccount, is refused rather than handed out.
func SecretToken(ctx context.Context, cs kubernetes.Interface, namespace, secret, sa string, timeout time.Duration) (string, error) {
	var token string
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading Secret %s/%s: %w", namespace, secret, err)
		}
		if err := checkTokenSecret(s, sa); err != nil {
			return false, err
		}
		token = string(s.Data[corev1.ServiceAccountTokenKey])
		if token == "" {
			last = fmt.Errorf("secret %s/%s has no %q yet (the token controller fills it)", namespace, secret, corev1.ServiceAccountTokenKey)
		}
		return token != "", nil
	})
	if err != nil && last != nil {
		return "", fmt.Errorf("%w: %w", last, err)
	}
	return token, err
}

// checkTokenSecret refuses a Secret that is not the token Secret of sa.
func checkTokenSecret(s *corev1.Secret, sa string) error {
	if s.Type != corev1.SecretTypeServiceAccountToken {
		return fmt.Errorf("secret %s/%s has type %q, want %q", s.Namespace, s.Name, s.Type, corev1.SecretTypeServiceAccountToken)
	}
	if got := s.Annotations[corev1.ServiceAccountNameKey]; got != sa {
		return fmt.Errorf("secret %s/%s holds a token of ServiceAccount %q, not %q", s.Namespace, s.Name, got, sa)
	}
	return nil
}

// ClusterFromREST returns the API server and CA a rest.Config points at, never its credentials.
func ClusterFromREST(rc *rest.Config) (Cluster, error) {
	ca := rc.CAData
	if len(ca) == 0 && rc.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			return Cluster{}, fmt.Errorf("reading the cluster CA: %w", err)
		}
	}
	return Cluster{Server: rc.Host, CAData: ca, InsecureSkipTLSVerify: rc.Insecure}, nil
}
