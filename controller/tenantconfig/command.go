package tenantconfig

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Lifetimes of a TokenRequest token (--duration). A printed kubeconfig leaves the cluster with its
// holder, so its token expires: one hour by default and at most a day. The API server may shorten
// it further (--service-account-max-token-expiration). A tool that needs longer renews its token
// (`manager kubeconfig` again, or a TokenRequest of its own).
const (
	// DefaultDuration is the lifetime asked for when --duration is not given.
	DefaultDuration = time.Hour
	// MinDuration is the shortest lifetime the API server grants a TokenRequest.
	MinDuration = 10 * time.Minute
	// MaxDuration caps --duration.
	MaxDuration = 24 * time.Hour
)

// Options are the flags of the `kubeconfig` command.
type Options struct {
	Namespace, ServiceAccount string
	// FromSecret names the ServiceAccount's token Secret to read; empty means a TokenRequest.
	FromSecret string
	// Duration is the requested lifetime of a TokenRequest token.
	Duration time.Duration
	// Server and CAFile override the API server URL and CA of the caller's kubeconfig.
	Server, CAFile string
	// Kubeconfig and Context select the caller's kubeconfig (default: $KUBECONFIG, ~/.kube/config
	// or in-cluster) and context in it.
	Kubeconfig, Context string
	// Name names the context and user written; default "<serviceAccount>@<namespace>".
	Name string
	// Wait bounds how long an empty token Secret is waited for.
	Wait time.Duration
}

// NewFlagSet registers the command's flags into a new FlagSet writing into o. It prints nothing:
// the caller reports errors and help (manager's dispatch does, alike for every command).
func NewFlagSet(o *Options) *flag.FlagSet {
	fs := flag.NewFlagSet("kubeconfig", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.Namespace, "namespace", "", "Namespace of the ServiceAccount (required).")
	fs.StringVar(&o.ServiceAccount, "service-account", "", "Name of the ServiceAccount (required).")
	fs.StringVar(&o.FromSecret, "from-secret", "", "Read the long-lived token from this kubernetes.io/service-account-token Secret instead of requesting one.")
	fs.DurationVar(&o.Duration, "duration", DefaultDuration, fmt.Sprintf("Lifetime requested for a fresh token (TokenRequest), from %s to %s; the API server may shorten it.", MinDuration, MaxDuration))
	fs.StringVar(&o.Server, "server", "", "API server URL written into the kubeconfig (default: the current kubeconfig's).")
	fs.StringVar(&o.CAFile, "certificate-authority", "", "PEM file of the CA written into the kubeconfig (default: the current kubeconfig's).")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Kubeconfig used to read the token (default: $KUBECONFIG, ~/.kube/config, or in-cluster).")
	fs.StringVar(&o.Context, "context", "", "Context of the kubeconfig to use (default: its current context).")
	fs.StringVar(&o.Name, "name", "", "Name of the context and user written (default: <service-account>@<namespace>).")
	fs.DurationVar(&o.Wait, "wait", 30*time.Second, "How long to wait for the token controller to fill an empty token Secret.")
	return fs
}

// Validate checks what single flags cannot (required flags, exclusions, bounds) once fs, the
// FlagSet of NewFlagSet, has parsed the arguments into o.
func (o Options) Validate(fs *flag.FlagSet) error {
	durationSet := false
	fs.Visit(func(f *flag.Flag) { durationSet = durationSet || f.Name == "duration" })
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	case o.Namespace == "" || o.ServiceAccount == "":
		return errors.New("--namespace and --service-account are required")
	case o.FromSecret != "" && durationSet:
		return errors.New("--from-secret and --duration exclude each other: a Secret's token does not expire")
	case o.FromSecret == "" && o.Duration < MinDuration:
		// The API server refuses TokenRequests shorter than 10 minutes.
		return fmt.Errorf("--duration must be at least 10m, not %s", o.Duration)
	case o.FromSecret == "" && o.Duration > MaxDuration:
		return fmt.Errorf("--duration must be at most %s, not %s: a kubeconfig's token is capped so that a leaked file stops working within a day; renew it with manager kubeconfig when it expires", shortDuration(MaxDuration), o.Duration)
	}
	return nil
}

// Run builds the kubeconfig the options describe and writes it to out.
func Run(ctx context.Context, o Options, out io.Writer) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the current kubeconfig: %w", err)
	}
	cluster, err := ClusterFromREST(rc)
	if err != nil {
		return err
	}
	cluster.Server = cmp.Or(o.Server, cluster.Server)
	if o.CAFile != "" {
		if cluster.CAData, err = os.ReadFile(o.CAFile); err != nil {
			return fmt.Errorf("reading --certificate-authority: %w", err)
		}
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	var token string
	if o.FromSecret != "" {
		token, err = SecretToken(ctx, cs, o.Namespace, o.FromSecret, o.ServiceAccount, o.Wait)
	} else {
		token, err = RequestToken(ctx, cs, o.Namespace, o.ServiceAccount, o.Duration)
	}
	if err != nil {
		return err
	}
	kc, err := Build(cluster, Identity{Namespace: o.Namespace, ServiceAccount: o.ServiceAccount, Token: token}, o.Name)
	if err != nil {
		return err
	}
	_, err = out.Write(kc)
	return err
}

// shortDuration prints d without trailing zero units ("24h", not "24h0m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
