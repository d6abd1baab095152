// Package testbed runs the project's local test bed: a kwok cluster made of real Kubernetes
// binaries from bin/, the chart installed the way `helm upgrade -i` does it (Helm Go SDK), and the
// manager as a local process started with the args and env of the installed Deployment and a
// token of the chart's ServiceAccount. `make up` (tests/testbed/cmd/testbed) and the e2e suite
// share this code, so what the e2e suite tests is what developers run.
package testbed
