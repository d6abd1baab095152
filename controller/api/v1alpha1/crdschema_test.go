package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// structuralSchema reads a CRD of the chart and returns the structural schema of its first
// version, as the apiserver builds it.
func structuralSchema(t *testing.T, file string) *schema.Structural {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "charts", "platform-operators", "files", "crds", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := schema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The apiserver's CEL limits (k8s.io/apiserver/pkg/apis/cel: PerCallLimit, RuntimeCELCostBudget).
const (
	celPerCallLimit = 1000000
	celCostBudget   = 10000000
)

// scheduleValidator evaluates the CEL rules of ScheduledJob's spec.schedule in process, with the
// apiserver's own library (k8s.io/apiextensions-apiserver, the version of our envtest binaries):
// fast enough to compare thousands of schedules with the controller's parser.
func scheduleValidator(t *testing.T) func(string) field.ErrorList {
	t.Helper()
	s := structuralSchema(t, "ops.platform-operators.io_scheduledjobs.yaml")
	sch := s.Properties["spec"].Properties["schedule"]
	if len(sch.XValidations) < 5 {
		t.Fatalf("spec.schedule has %d CEL rules, want one per cron field and more", len(sch.XValidations))
	}
	v := cel.NewValidator(&sch, false, celPerCallLimit)
	return func(schedule string) field.ErrorList {
		errs, remaining := v.Validate(context.Background(), field.NewPath("spec", "schedule"), &sch, schedule, nil, celCostBudget)
		if remaining < 0 {
			t.Fatalf("%q: CEL cost budget exceeded", schedule)
		}
		return errs
	}
}
