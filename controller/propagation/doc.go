// Package propagation holds the pure logic of copying Secrets between namespaces: which
// namespaces are targets, what a copy looks like, whether a copy is in step with its source, and
// the plan of writes (create, update, replace, delete, release) that brings the cluster to the
// wanted state. It calls no API: the secretsync reconciler reads the world, asks Plan what to do,
// and does exactly that.
//
// Ownership rule: a copy is ours when it carries LabelSecretSync with our SecretSync's name (or,
// pulled by a tenant, LabelCopyRequest with the CopyRequest's name). We
// own its data, its type and our label and annotation keys; every other label or annotation on
// it belongs to someone else and is kept. A Secret without our label is never written.
package propagation

// Keys we own on the objects we write.
const (
	// LabelSecretSync marks a copy and names the SecretSync that manages it. The manager's cache
	// selects Secrets on this label, so copies are all it holds outside source namespaces.
	LabelSecretSync = "ops.platform-operators.io/secretsync"
	// AnnotationSource names the copy's source as "<namespace>/<name>".
	AnnotationSource = "ops.platform-operators.io/source"
	// AnnotationDeletionPolicy records on a copy what to do with it when its SecretSync is gone
	// (Delete or Orphan), so cleanup needs no finalizer on the SecretSync and never blocks it.
	AnnotationDeletionPolicy = "ops.platform-operators.io/deletion-policy"
	// AnnotationPullSecrets, on a ServiceAccount, lists (comma-separated, sorted) the
	// imagePullSecrets entries we added, so that we remove only those.
	AnnotationPullSecrets = "ops.platform-operators.io/image-pull-secrets"
	// LabelCopyRequest marks a copy made for a tenant's CopyRequest (pull mode) and names the
	// CopyRequest, in the copy's namespace. Such a copy never carries LabelSecretSync.
	LabelCopyRequest = "ops.platform-operators.io/copyrequest"
	// LabelOffer, set to "true" on a Secret or ConfigMap by its owner, offers it to the
	// namespaces AnnotationOfferNamespaces lists (pull mode). The manager caches only the
	// objects that carry it.
	LabelOffer = "ops.platform-operators.io/offer"
	// AnnotationOfferNamespaces lists, comma-separated, the namespaces (names or globs) an
	// offered object may be copied into by a CopyRequest.
	AnnotationOfferNamespaces = "ops.platform-operators.io/offer-namespaces"
	// LabelManagedBy is the standard managed-by label, for people and tools.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is our value of LabelManagedBy.
	ManagedByValue = "platform-operators"
)
