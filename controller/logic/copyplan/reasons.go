package copyplan

import "slices"

// ConditionReady is True when every wanted copy is in step.
const ConditionReady = "Ready"

// Reasons of the Ready condition, of status.failures entries and of Events (SecretSync and
// CopyRequest). docs/troubleshooting.md explains each (TestTroubleshootingExplainsEveryReason).
const (
	ReasonSynced                  = "Synced"
	ReasonProgressing             = "Progressing"
	ReasonInvalidSpec             = "InvalidSpec"
	ReasonSourceNamespaceNotFound = "SourceNamespaceNotFound"
	ReasonSourceNotFound          = "SourceNotFound"
	ReasonSourceTypeMismatch      = "SourceTypeMismatch"
	ReasonConflict                = "Conflict"
	ReasonTooLarge                = "TooLarge"
	ReasonInvalid                 = "Invalid"
	ReasonWriteFailed             = "WriteFailed"
	ReasonKeysNotFound            = "KeysNotFound"
	ReasonNotDockerConfigJSON     = "NotDockerConfigJSON"
	ReasonCopiesWritten           = "CopiesWritten"
	// ReasonNotOffered and ReasonCopied are a CopyRequest's.
	ReasonNotOffered = "NotOffered"
	ReasonCopied     = "Copied"
)

// More reasons of a SecretSync's Ready condition (and Events).
const (
	// ReasonSourceNamespaceTerminating: the source namespace is being deleted; nothing is
	// copied or removed.
	ReasonSourceNamespaceTerminating = "SourceNamespaceTerminating"
	// ReasonSourceWithheld: the spec picks a source that is never copied (the manager's
	// ownership key, a Helm release, a ServiceAccount or bootstrap token: propagation.Withheld).
	// The other sources are copied; copies of a withheld one are removed per deletionPolicy.
	ReasonSourceWithheld = "SourceWithheld"
	// ReasonReadFailed: the pass could not read what it needs (a list failed, a source cache
	// did not sync); nothing was written, and it is retried with backoff.
	ReasonReadFailed = "ReadFailed"
	// ReasonHeld: a copy (SecretSync or CopyRequest) is being deleted and held there by a
	// finalizer; nothing is written to it until it is gone, and it is looked at with backoff.
	ReasonHeld = "Held"
	// ReasonNamespaceNotManaged: the SecretSync names a namespace (its source, or a target in
	// includeNamespaces) outside those a manager limited to namespaces works in (chart:
	// rbac.namespaces). A source there stops the sync; a target there gets no copy.
	ReasonNamespaceNotManaged = "NamespaceNotManaged"
	// ReasonSourceNamespaceUnconfirmed: copies whose source is gone are kept because the source
	// namespace could not be read to confirm it is not being deleted.
	ReasonSourceNamespaceUnconfirmed = "SourceNamespaceUnconfirmed"
	// ReasonNamespaceSelectorUnsupported: a manager limited to namespaces cannot read Namespace
	// labels, and spec.target.namespaceSelector needs some; nothing is copied or removed.
	ReasonNamespaceSelectorUnsupported = "NamespaceSelectorUnsupported"
	// ReasonFieldsTakenBack (an Event on the copy): another field manager (a tenant's kubectl
	// edit) held a field of the copy that the manager writes (its data, type, or a key of ours);
	// the apply set it back to the source's, or removed a key the source does not have.
	ReasonFieldsTakenBack = "FieldsTakenBack"
)

// blocking are the Ready reasons with which a pass copies and removes nothing: the reasons of the
// reconciler's blockers (a bad spec, a source namespace missing, being deleted or not managed, a
// source of the wrong type, a selector a namespaced manager cannot read), which readyCondition
// puts first, and ReadFailed.
var blocking = []string{ReasonInvalidSpec, ReasonSourceNamespaceNotFound, ReasonSourceNamespaceTerminating,
	ReasonSourceTypeMismatch, ReasonNamespaceNotManaged, ReasonNamespaceSelectorUnsupported, ReasonReadFailed}

// Blocks reports whether a Ready condition with this reason means the SecretSync copies and
// removes nothing (then no namespace's copies are judged one by one). SourceNotFound and
// SourceWithheld do not: they are per source.
func Blocks(reason string) bool { return slices.Contains(blocking, reason) }
