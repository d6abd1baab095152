// Package propagation holds the pure logic of copying Secrets between namespaces: which
// namespaces are targets, what a copy looks like, whether a copy is in step with its source, and
// the plan of writes (create, update, replace, delete, release) that brings the cluster to the
// wanted state. It calls no API: the secretsync reconciler reads the world, asks Compute (or
// ComputeFor, for a CopyRequest) for the Plan, and does exactly that. It must not import
// controller-runtime or client-go; the label and annotation keys come from package keys.
//
// Ownership rule: a copy is ours when it carries keys.LabelSecretSync with our SecretSync's name (or,
// pulled by a tenant, keys.LabelCopyRequest with the CopyRequest's name). We
// own its data, its type and our label and annotation keys; every other label or annotation on
// it belongs to someone else and is kept. A Secret without our label is never written.
package propagation
