// Package testenv is the one envtest harness of the controller packages: it starts envtest's
// kube-apiserver and etcd (from KUBEBUILDER_ASSETS, built by `make tools`) with the chart's
// CRDs, per test (StartAPIServer, Start) or once per package (StartSuite, from a TestMain), builds
// a manager whose caches are configured as the manager's, and plays the Job controller, which
// envtest does not run. It is imported by tests only.
package testenv
