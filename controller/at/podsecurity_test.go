package at

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Issue 28: an At command runs in a namespace that enforces Pod Security "restricted": its pod
// passes the same checks the API server's PodSecurity admission runs (its library, evaluated
// here against the latest policy version).
func TestACommandPodSatisfiesRestricted(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, image := range []string{"", "registry.example.com/tools/psql:16"} {
		at := commandAt("team", "backup", time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
		at.Spec.Image = image
		job := NewJob(at, testImage)
		pod := job.Spec.Template
		res := policy.AggregateCheckResults(eval.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
		if !res.Allowed {
			t.Errorf("image %q: the command's pod violates restricted: %s", image, res.ForbiddenDetail())
		}
	}
	// A jobTemplate is the user's: taken as written.
	at := commandAt("team", "custom", time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	at.Spec.Command = ""
	at.Spec.JobTemplate = &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1PodTemplate("c")}}
	if sc := NewJob(at, testImage).Spec.Template.Spec.SecurityContext; sc != nil {
		t.Errorf("a jobTemplate got a pod securityContext %+v, want it as written", sc)
	}
}
