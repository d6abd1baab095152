// Package v1alpha1 holds the API of platform-operators, group ops.platform-operators.io.
//
// It owns the CRD types, their markers (defaults, enums, CEL rules: admission without a
// webhook) and the generated deepcopy. It must not import any package of ours: every controller
// imports it. CRDs are generated from it into the chart by `make manifests`.
// +kubebuilder:object:generate=true
// +groupName=ops.platform-operators.io
package v1alpha1
