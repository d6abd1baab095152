package keys

import "testing"

// The values are part of the product's contract (users set the offer label and the run-now
// annotation; copies already in clusters carry the others): they must never change by accident.
func TestKeysKeepTheirValues(t *testing.T) {
	for got, want := range map[string]string{
		LabelSecretSync:               "ops.platform-operators.io/secretsync",
		LabelCopyRequest:              "ops.platform-operators.io/copyrequest",
		AnnotationSource:              "ops.platform-operators.io/source",
		AnnotationDeletionPolicy:      "ops.platform-operators.io/deletion-policy",
		AnnotationMetadataKeys:        "ops.platform-operators.io/metadata-keys",
		AnnotationBinaryKeys:          "ops.platform-operators.io/binary-keys",
		AnnotationDataDigest:          "ops.platform-operators.io/cached-data-digest",
		AnnotationMetadataDigest:      "ops.platform-operators.io/cached-metadata-digest",
		AnnotationOwnership:           "ops.platform-operators.io/ownership",
		LabelManagedBy:                "app.kubernetes.io/managed-by",
		LabelOffer:                    "ops.platform-operators.io/offer",
		AnnotationOfferNamespaces:     "ops.platform-operators.io/offer-namespaces",
		AnnotationPullSecrets:         "ops.platform-operators.io/image-pull-secrets",
		LabelCreatedBy:                "ops.platform-operators.io/created-by",
		AnnotationRunNow:              "ops.platform-operators.io/run-now",
		AnnotationRunNowToken:         "ops.platform-operators.io/run-now-token",
		AnnotationAlertNoSuccessAfter: "ops.platform-operators.io/alert-no-success-after",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}
