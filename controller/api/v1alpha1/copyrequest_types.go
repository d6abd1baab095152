package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CopyRequestSource names the offered object to copy.
type CopyRequestSource struct {
	// kind of the source: Secret or ConfigMap. Default: Secret.
	// +optional
	// +kubebuilder:default=Secret
	Kind CopyKind `json:"kind,omitempty"`

	// namespace of the source.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// name of the source.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// CopyRequestSpec is the source a tenant asks for and the name of its copy.
type CopyRequestSpec struct {
	// source is the Secret or ConfigMap to copy into this CopyRequest's namespace. Its owner must
	// offer it to this namespace: the label ops.platform-operators.io/offer=true and the
	// annotation ops.platform-operators.io/offer-namespaces listing this namespace (names or
	// globs, comma-separated) on the source.
	// +required
	Source CopyRequestSource `json:"source"`

	// name of the copy in this namespace. Default: the source's name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name,omitempty"`
}

// CopyRequestStatus is the observed state of a CopyRequest.
type CopyRequestStatus struct {
	// conditions report the state: Ready is True when the copy is in step with the source. Reasons when False:
	// NotOffered (the source does not exist or is not offered to this namespace: the two are not
	// told apart), Conflict (an object the add-on does not manage has the copy's name),
	// TooLarge/Invalid (the API server refused the copy), WriteFailed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// copy is the name of the copy in this namespace, once it is in step.
	// +optional
	Copy string `json:"copy,omitempty"`
	// lastSyncTime is when the copy was last written (created, updated, recreated or deleted).
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
}

// CopyRequest is a tenant's request, with namespaced RBAC only, for a copy in its own namespace
// of a Secret or ConfigMap that the source's owner has offered to that namespace. The copy is
// kept in step with the source, repaired when edited, and deleted with the CopyRequest or when
// the offer is withdrawn. It never gives access to an object that is not offered.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=creq,categories=platform-operators
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.source.kind`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.namespace`
// +kubebuilder:printcolumn:name="Name",type=string,JSONPath=`.spec.source.name`
// +kubebuilder:printcolumn:name="Copy",type=string,JSONPath=`.status.copy`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CopyRequest struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the source asked for.
	// +required
	Spec CopyRequestSpec `json:"spec"`
	// status is what the controller observed.
	// +optional
	Status CopyRequestStatus `json:"status,omitempty"`
}

// CopyRequestList is a list of CopyRequests.
// +kubebuilder:object:root=true
type CopyRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CopyRequest `json:"items"`
}

func init() {
	register(&CopyRequest{}, &CopyRequestList{})
}
