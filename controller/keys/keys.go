package keys

// Prefix starts every label and annotation key of ours.
const Prefix = "ops.platform-operators.io/"

// SecretSync and CopyRequest copies.
const (
	// LabelSecretSync marks a copy and names the SecretSync that manages it. The manager's cache
	// selects Secrets and ConfigMaps on this label, so copies are all it holds outside source
	// namespaces.
	LabelSecretSync = Prefix + "secretsync"
	// LabelCopyRequest marks a copy made for a tenant's CopyRequest (pull mode) and names the
	// CopyRequest, in the copy's namespace. Such a copy never carries LabelSecretSync.
	LabelCopyRequest = Prefix + "copyrequest"
	// AnnotationSource names the copy's source as "<namespace>/<name>".
	AnnotationSource = Prefix + "source"
	// AnnotationDeletionPolicy records on a copy what to do with it when its SecretSync is gone
	// (Delete or Orphan), so cleanup needs no finalizer on the SecretSync and never blocks it.
	AnnotationDeletionPolicy = Prefix + "deletion-policy"
	// AnnotationMetadataKeys records on a copy the labels and annotations besides our own that its
	// SecretSync set ("labels=a,b;annotations=c"), so that a key dropped from the SecretSync is
	// removed from the copy while keys others add stay.
	AnnotationMetadataKeys = Prefix + "metadata-keys"
	// AnnotationBinaryKeys, on a ConfigMap's envelope only (propagation.FromConfigMap), lists
	// (comma-separated, sorted) the keys that came from binaryData rather than data. It is never
	// written to a ConfigMap.
	AnnotationBinaryKeys = Prefix + "binary-keys"
	// AnnotationDataDigest is, on a copy held in the manager's cache only, the digest of the data
	// the cache dropped (propagation.Bounded). It is never written to the API.
	AnnotationDataDigest = Prefix + "cached-data-digest"
	// AnnotationMetadataDigest is, on a copy held in the manager's cache only, the digest of the
	// labels and annotations its SecretSync set (those AnnotationMetadataKeys lists), which the
	// cache does not keep (propagation.Bounded). It is never written to the API.
	AnnotationMetadataDigest = Prefix + "cached-metadata-digest"
	// AnnotationOwnership is the manager's proof that it made the copy: an HMAC-SHA256, under a key
	// only the manager reads, of the copy's kind, namespace and name and of the owner its label
	// names (propagation.Prover). A labelled object without a valid proof is never updated,
	// deleted or released, unless its data already is the source's (docs/secretsync.md).
	AnnotationOwnership = Prefix + "ownership"
	// AnnotationOrphaned is set by the manager on a copy of a SecretSync with deletionPolicy
	// Orphan whose named source is gone (the copy is kept, still ours): the digest of the copy's
	// data then. When the source returns, a copy whose data still has that digest follows it (the
	// annotation goes with that update); one a tenant changed meanwhile is a Conflict.
	AnnotationOrphaned = Prefix + "orphaned"
	// LabelManagedBy is the standard managed-by label, for people and tools.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is our value of LabelManagedBy.
	ManagedByValue = "platform-operators"
)

// Sources offered to tenants (pull mode) and ServiceAccounts.
const (
	// LabelOffer, set to "true" on a Secret or ConfigMap by its owner, offers it to the
	// namespaces AnnotationOfferNamespaces lists. The manager caches only the metadata of the
	// objects that carry it. A copy (LabelSecretSync or LabelCopyRequest) is never an offer.
	LabelOffer = Prefix + "offer"
	// AnnotationOfferNamespaces lists, comma-separated, the namespaces (names or globs) an
	// offered object may be copied into by a CopyRequest.
	AnnotationOfferNamespaces = Prefix + "offer-namespaces"
	// AnnotationPullSecrets, on a ServiceAccount, lists (comma-separated, sorted) the
	// imagePullSecrets entries we added, so that we remove only those.
	AnnotationPullSecrets = Prefix + "image-pull-secrets"
)

// Jobs and ScheduledJobs.
const (
	// LabelCreatedBy marks every Job the manager creates; its value is the kind of the parent in
	// lower case ("at" or "scheduledjob"). The manager caches only Jobs with this label.
	LabelCreatedBy = Prefix + "created-by"
	// AnnotationRunNow on a ScheduledJob asks for one run now, outside the schedule. Its value is
	// a token of the user's choice (a timestamp, a UUID): each new token creates one Job (subject
	// to concurrencyPolicy); setting the same token again does nothing. At most one run-now Job a
	// minute per ScheduledJob: a token within a minute of the last run-now Job waits until the
	// minute has passed (status.runNowWaiting, one RunNowDelayed Event), never dropped; a newer
	// token replaces the waiting one.
	AnnotationRunNow = Prefix + "run-now"
	// AnnotationRunNowToken on a Job created by a run-now request holds the request's token.
	AnnotationRunNowToken = Prefix + "run-now-token"
	// AnnotationBackfill on a ScheduledJob asks for the schedule's slots of a past range to be
	// run, each as its own Job with its own scheduled time: "<from>/<to>", two RFC 3339 instants,
	// from inclusive and to exclusive, from at most 31 days back, to not in the future, at most
	// 100 slots. One Job every 10 seconds (concurrencyPolicy Forbid or Replace: one at a time),
	// progress in status.backfill; a slot that has a Job already is not run again, and the same
	// value asked again does nothing. A new value starts a new backfill; removing it cancels the
	// one under way.
	AnnotationBackfill = Prefix + "backfill"
	// AnnotationAlertNoSuccessAfter on a ScheduledJob sets its own threshold (a Go duration,
	// "26h") of the chart's no-success alert, exported as a per-object series; unset, unparsable
	// or not positive: the chart's prometheusRule.scheduledJobNoSuccessAfterSeconds applies.
	AnnotationAlertNoSuccessAfter = Prefix + "alert-no-success-after"
)
