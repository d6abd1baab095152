package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionPolicy says what happens to copies that are no longer wanted.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionPolicyDelete deletes copies that are no longer wanted.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyOrphan releases them: our label and annotations are removed and the Secret stays.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// CopyKind is the kind of object a SecretSync or CopyRequest copies.
// +kubebuilder:validation:Enum=Secret;ConfigMap
type CopyKind string

const (
	// CopyKindSecret copies Secrets.
	CopyKindSecret CopyKind = "Secret"
	// CopyKindConfigMap copies ConfigMaps (data and binaryData), e.g. a CA bundle.
	CopyKindConfigMap CopyKind = "ConfigMap"
)

// AllServiceAccounts, alone in spec.imagePullSecretFor, names every ServiceAccount of each
// target namespace, those created later included.
const AllServiceAccounts = "*"

// SecretSyncSource selects the Secrets (or ConfigMaps) to copy.
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.selector)",message="exactly one of source.name or source.selector must be set"
// +kubebuilder:validation:XValidation:rule="self.kind != 'ConfigMap' || !has(self.type)",message="source.type selects Secrets by type: a ConfigMap has none"
// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="source.kind cannot change: create another SecretSync for the other kind"
type SecretSyncSource struct {
	// kind of the objects to copy: Secret or ConfigMap (CA bundles, shared configuration). The
	// semantics are the same for both; a ConfigMap keeps data and binaryData apart on its
	// copies. It cannot change once set. Default: Secret.
	// +optional
	// +kubebuilder:default=Secret
	Kind CopyKind `json:"kind,omitempty"`

	// namespace holds the source Secrets. It is never a target. A kube-* namespace is refused
	// (its Secrets are the cluster's own credentials), and so, by the chart's admission policy,
	// is the manager's own namespace unless the chart's values allow it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('kube-')",message="source.namespace may not be a kube-* namespace: its Secrets are the cluster's own credentials (ServiceAccount and bootstrap tokens, control-plane keys) and are never copied to tenants"
	Namespace string `json:"namespace"`

	// name of the one Secret to copy. Exactly one of name and selector is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name,omitempty"`

	// selector picks every Secret of the source namespace whose labels match (an empty selector
	// matches all of them). Exactly one of name and selector is set.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="selector.matchExpressions[].operator must be one of In, NotIn, Exists, DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="selector.matchExpressions[].values must be non-empty for In and NotIn and empty for Exists and DoesNotExist"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// type limits the copies, when set, to Secrets of this type (e.g. kubernetes.io/dockerconfigjson).
	// +optional
	Type corev1.SecretType `json:"type,omitempty"`
}

// SecretSyncTarget chooses the namespaces that get copies.
type SecretSyncTarget struct {
	// namespaceSelector picks target namespaces by label; empty or absent means all namespaces.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="namespaceSelector.matchExpressions[].operator must be one of In, NotIn, Exists, DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="namespaceSelector.matchExpressions[].values must be non-empty for In and NotIn and empty for Exists and DoesNotExist"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// name of the copies, when it differs from the source's (e.g. the source harbor-pull is copied
	// as regcred). Only with source.name: a selector picks several Secrets, which cannot share one
	// name. Changing it makes the copies of the old name unwanted: they go per deletionPolicy.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name,omitempty"`

	// labels are set on every copy, e.g. for Argo CD or Reloader; they win over the source's
	// labels that travel (sourceLabels). A label removed here is removed from the copies; labels
	// others add to a copy stay. The add-on's own keys (ops.platform-operators.io/*,
	// app.kubernetes.io/managed-by) cannot be set.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('ops.platform-operators.io/') && k != 'app.kubernetes.io/managed-by')",message="target.labels may not set ops.platform-operators.io/* or app.kubernetes.io/managed-by: the add-on sets them"
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are set on every copy, e.g. reloader.stakater.com/match; they win over the
	// source's annotations that travel. The add-on's own keys (ops.platform-operators.io/*) and
	// kubectl's last-applied-configuration cannot be set.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('ops.platform-operators.io/') && k != 'kubectl.kubernetes.io/last-applied-configuration')",message="target.annotations may not set ops.platform-operators.io/* or kubectl.kubernetes.io/last-applied-configuration"
	Annotations map[string]string `json:"annotations,omitempty"`

	// sourceLabels picks the source's labels that travel to the copies: label keys, prefixes
	// ending in * (app.kubernetes.io/*), or * for all of them. Default: none travel. The
	// add-on's own keys never do.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^(\*|[A-Za-z0-9][-A-Za-z0-9_./]*\*?)$`
	SourceLabels []string `json:"sourceLabels,omitempty"`

	// sourceAnnotations picks the source's annotations that travel to the copies, as
	// sourceLabels does for labels. Default: none travel.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^(\*|[A-Za-z0-9][-A-Za-z0-9_./]*\*?)$`
	SourceAnnotations []string `json:"sourceAnnotations,omitempty"`

	// includeNamespaces limits, when set, the copies to namespaces whose name matches one of these
	// names or globs (`*` any run of characters, `?` one; e.g. team-*, *-prod), on top of
	// namespaceSelector (both must match). Empty: every namespace the selector picks.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.matches('^[-a-z0-9*?]+$'))",message="includeNamespaces entries are namespace names or globs of lower-case letters, digits, '-', '*' and '?'"
	IncludeNamespaces []string `json:"includeNamespaces,omitempty"`

	// excludeNamespaces never get copies, whatever the selector and includeNamespaces say: names
	// or globs (`*` any run of characters, `?` one; e.g. kube-*, *-system). The source namespace
	// is always excluded, and so is a namespace being deleted. Default: kube-system, kube-public,
	// kube-node-lease.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:default={"kube-system","kube-public","kube-node-lease"}
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.matches('^[-a-z0-9*?]+$'))",message="excludeNamespaces entries are namespace names or globs of lower-case letters, digits, '-', '*' and '?'"
	ExcludeNamespaces []string `json:"excludeNamespaces,omitempty"`
}

// SecretSyncKeys chooses which keys of the source's data the copies hold, and under which names.
// +kubebuilder:validation:XValidation:rule="!has(self.rename) || self.rename.all(r, self.rename.exists_one(o, o.to == r.to))",message="keys.rename: two keys renamed to the same name"
type SecretSyncKeys struct {
	// include lists, when set, the only keys of the source's data that are copied.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[-._a-zA-Z0-9]+$`
	Include []string `json:"include,omitempty"`

	// exclude never copies these keys (applied after include), e.g. tls.key to share only a
	// certificate.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[-._a-zA-Z0-9]+$`
	Exclude []string `json:"exclude,omitempty"`

	// rename gives copied keys another name in the copies (from the source's key to the copy's).
	// A renamed key that lands on another copied key replaces it.
	// +optional
	// +listType=map
	// +listMapKey=from
	// +kubebuilder:validation:MaxItems=256
	Rename []KeyRename `json:"rename,omitempty"`
}

// KeyRename renames one key of the source's data in the copies.
type KeyRename struct {
	// from is the key in the source's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	From string `json:"from"`

	// to is the key's name in the copies.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	To string `json:"to"`
}

// SecretSyncSpec is what to copy, where, and what to do with copies no longer wanted.
// +kubebuilder:validation:XValidation:rule="!has(self.imagePullSecretFor) || self.source.kind != 'ConfigMap'",message="imagePullSecretFor needs Secret copies of type kubernetes.io/dockerconfigjson, not ConfigMaps"
// +kubebuilder:validation:XValidation:rule="!has(self.target) || !has(self.target.name) || has(self.source.name)",message="target.name renames the copy of one named Secret: set source.name, not source.selector"
type SecretSyncSpec struct {
	// source selects the Secrets to copy.
	// +required
	Source SecretSyncSource `json:"source"`

	// target chooses the namespaces that get copies. Default: every namespace except the
	// excluded ones and the source namespace.
	// +optional
	// +kubebuilder:default={}
	Target SecretSyncTarget `json:"target,omitzero"`

	// keys chooses which keys of the source's data the copies hold (include, exclude) and
	// renames some (ca.crt -> ca-bundle.crt). A key named here that a source lacks is reported
	// (Ready False, KeysNotFound); the other keys are still copied. Default: every key as is.
	// +optional
	Keys *SecretSyncKeys `json:"keys,omitempty"`

	// deletionPolicy is what happens to a copy that is no longer wanted (its source is gone, its
	// namespace stopped matching, or this SecretSync is deleted): Delete removes it, Orphan
	// releases it (our label and annotations are removed; the Secret stays). Default: Delete.
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// imagePullSecretFor names ServiceAccounts that, in every target namespace, get the copies in
	// their imagePullSecrets (also ServiceAccounts created later): up to 16 names, or ["*"] for
	// every ServiceAccount of every target namespace, those created later included. Copies must
	// be of type kubernetes.io/dockerconfigjson. Entries others added are never touched; ours
	// leave a ServiceAccount that is no longer named (or no longer a target).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || size(self) == 1",message="imagePullSecretFor: \"*\" already means every ServiceAccount; list it alone"
	ImagePullSecretFor []string `json:"imagePullSecretFor,omitempty"`
}

// TargetFailure is one copy that is not in step, and why.
type TargetFailure struct {
	// namespace of the copy.
	// +required
	Namespace string `json:"namespace"`
	// name of the copy.
	// +required
	Name string `json:"name"`
	// reason is a CamelCase word: Conflict (a Secret we do not manage has the name), TooLarge or
	// Invalid (the API server refused the copy; it is not retried until its source or the
	// SecretSync changes, or a slow recheck), or WriteFailed (any other error; retried with backoff).
	// +required
	Reason string `json:"reason"`
	// message says what went wrong and what to do.
	// +required
	Message string `json:"message"`
}

// MaxReportedFailures bounds status.failures.
const MaxReportedFailures = 10

// SecretSyncStatus is the observed state of a SecretSync, rebuilt from the cluster on every sync.
type SecretSyncStatus struct {
	// conditions report the state: Ready is True when every wanted copy is in step.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// sources is the number of source Secrets matched.
	// +optional
	Sources int32 `json:"sources"`
	// targets is the number of target namespaces.
	// +optional
	Targets int32 `json:"targets"`
	// desired is the number of copies wanted (sources × targets).
	// +optional
	Desired int32 `json:"desired"`
	// synced is the number of copies in step with their source.
	// +optional
	Synced int32 `json:"synced"`
	// conflicts is the number of target Secrets that exist but are not ours to manage.
	// +optional
	Conflicts int32 `json:"conflicts"`
	// failed is the number of copies that could not be written.
	// +optional
	Failed int32 `json:"failed"`
	// syncedRatio is synced/desired for display, e.g. "41/42".
	// +optional
	SyncedRatio string `json:"syncedRatio,omitempty"`

	// lastSyncTime is when this SecretSync last wrote a copy: created, updated, recreated or
	// deleted one (the "Last Sync" column). A pass that finds every copy in step writes nothing
	// and leaves it as it was.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// failures lists up to 10 copies that are not in step, with the reason.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Failures []TargetFailure `json:"failures,omitempty"`
}

// SecretSync copies Secrets (or, with source.kind ConfigMap, ConfigMaps) from a source namespace
// into target namespaces and keeps the copies in step. It is cluster-scoped so that only cluster
// administrators can aim it at a source; tenants ask for offered sources with a CopyRequest.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ssync,categories=platform-operators
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.source.kind`,priority=1
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.namespace`
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.status.syncedRatio`
// +kubebuilder:printcolumn:name="Conflicts",type=integer,JSONPath=`.status.conflicts`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SecretSync struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what to copy and where.
	// +required
	Spec SecretSyncSpec `json:"spec"`
	// status is what the controller observed.
	// +optional
	Status SecretSyncStatus `json:"status,omitempty"`
}

// SecretSyncList is a list of SecretSyncs.
// +kubebuilder:object:root=true
type SecretSyncList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecretSync `json:"items"`
}

func init() {
	register(&SecretSync{}, &SecretSyncList{})
}
