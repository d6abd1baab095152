package tenantconfig

import (
	"cmp"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is where the kubeconfig points: the API server and how to trust it.
type Cluster struct {
	// Name is the cluster's name in the kubeconfig; empty means "cluster".
	Name string
	// Server is the API server URL, e.g. https://127.0.0.1:6443.
	Server string
	// CAData is the PEM bundle that signs the API server's certificate; empty means the system roots.
	CAData []byte
	// InsecureSkipTLSVerify skips server certificate checks; only honoured when CAData is empty
	// (client-go refuses a kubeconfig that sets both).
	InsecureSkipTLSVerify bool
}

// Identity is the ServiceAccount the kubeconfig acts as.
type Identity struct {
	Namespace      string
	ServiceAccount string
	// Token is the bearer token, the kubeconfig's only credential.
	Token string
}

// Build returns a kubeconfig whose only user is id's token and whose current context points at
// cluster with id's namespace as the default namespace. The context and user are named
// contextName, or "<serviceAccount>@<namespace>" when contextName is empty.
//
// A client certificate next to the token would authenticate as its owner (often the admin), so
// nothing but the token is ever copied into the result.
func Build(cluster Cluster, id Identity, contextName string) ([]byte, error) {
	switch {
	case cluster.Server == "":
		return nil, errors.New("the API server URL is empty")
	case id.Namespace == "" || id.ServiceAccount == "":
		return nil, errors.New("the namespace and ServiceAccount must be set")
	case id.Token == "":
		return nil, fmt.Errorf("no token for ServiceAccount %s/%s", id.Namespace, id.ServiceAccount)
	}
	clusterName := cmp.Or(cluster.Name, "cluster")
	contextName = cmp.Or(contextName, id.ServiceAccount+"@"+id.Namespace)
	kc := clientcmdapi.NewConfig()
	kc.Clusters[clusterName] = &clientcmdapi.Cluster{
		Server:                   cluster.Server,
		CertificateAuthorityData: cluster.CAData,
		InsecureSkipTLSVerify:    len(cluster.CAData) == 0 && cluster.InsecureSkipTLSVerify,
	}
	kc.AuthInfos[contextName] = &clientcmdapi.AuthInfo{Token: id.Token}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: contextName, Namespace: id.Namespace}
	kc.CurrentContext = contextName
	return clientcmd.Write(*kc)
}
