package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// What only real nodes can show: a command's output, a time zone in the shipped image, an image
// pulled through the registry with the spread pull secret, a tenant kubeconfig used from a pod.
// These features run on E2E_PROVIDER=kind (make test runs it); kwok's nodes run no process.

const (
	realPodsNamespace = "e2e-realpods"
	// scheduleZone is a zone whose offset moves both the hour and the day boundary.
	scheduleZone = "Asia/Seoul"
)

// toolsImage is a local image with busybox and kubectl, loaded into the kind nodes (kindProvider).
var toolsImage string

func skipUnlessKind(t *testing.T) {
	t.Helper()
	if !isKind() {
		t.Skip("needs real nodes: runs with E2E_PROVIDER=kind (make test-e2e-kind)")
	}
}

func clientset(t *testing.T, cfg *envconf.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// jobPodLog waits for the Job's pod to finish and returns its log.
func jobPodLog(ctx context.Context, t *testing.T, cfg *envconf.Config, namespace, job string) string {
	t.Helper()
	c, cs := opsClient(t, cfg), clientset(t, cfg)
	var pod corev1.Pod
	waitFor(ctx, t, waitTimeout, "the pod of Job "+job+" never finished", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{"batch.kubernetes.io/job-name": job}); err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		pod = pods.Items[0]
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, nil
	})
	log, err := podLogs(ctx, cs, namespace, pod.Name, pod.Spec.Containers[0].Name)
	if err != nil {
		t.Fatalf("log of %s: %v", pod.Name, err)
	}
	return log
}

// nextSlot is the first whole minute at least 25 s ahead of now: far enough for the ScheduledJob
// to be created and seen before it.
func nextSlot(now time.Time) time.Time {
	slot := now.Truncate(time.Minute).Add(time.Minute)
	if slot.Sub(now) < 25*time.Second {
		slot = slot.Add(time.Minute)
	}
	return slot
}

func TestRealPods(t *testing.T) {
	var quoted *v1alpha1.At
	var zoned *v1alpha1.ScheduledJob
	var slot time.Time
	jobs := features.New("commands really run on the nodes")
	jobs = withNamespace(jobs, realPodsNamespace)
	jobs = jobs.Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		skipUnlessKind(t)
		c := opsClient(t, cfg)
		waitPullSecret(ctx, t, cfg, realPodsNamespace)
		// Shell quoting survives: two spaces inside quotes, arithmetic, a pipe.
		quoted = &v1alpha1.At{
			ObjectMeta: metav1.ObjectMeta{Namespace: realPodsNamespace, Name: "quoted"},
			Spec:       v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now()), Command: `x="a  b"; echo "$x" $((6*7)) | tr a A`},
		}
		// A daily schedule at the next minute as a clock in Seoul shows it. A manager that
		// cannot load the zone (an image without tzdata) reports UnknownTimeZone and runs nothing;
		// one that used UTC would fire nine hours off.
		slot = nextSlot(time.Now())
		local := slot.In(mustZone(t, scheduleZone))
		zoned = &v1alpha1.ScheduledJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: realPodsNamespace, Name: "seoul"},
			Spec: v1alpha1.ScheduledJobSpec{
				Schedule: fmt.Sprintf("%d %d * * *", local.Minute(), local.Hour()),
				TimeZone: ptr.To(scheduleZone),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: chartJobImage,
						// SCHEDULED_TIME: the slot, which the manager passes to every container.
						Command: []string{"/bin/sh", "-c", `echo "ran in $TZ_NAME for $SCHEDULED_TIME"`},
						Env:     []corev1.EnvVar{{Name: "TZ_NAME", Value: scheduleZone}}}},
				}}}},
			},
		}
		if err := c.Create(ctx, quoted); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, zoned); err != nil {
			t.Fatal(err)
		}
		return ctx
	})
	jobs = jobs.Assess("the manager's Go memory limit is 90% of its container's memory limit", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		// The chart's default limit is 256Mi: the cgroup says so only on a real node.
		log, err := bed.ManagerLogs(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		limit, ratio := float64(256<<20), 0.9
		want := fmt.Sprintf("%d", uint64(limit*ratio)) // as the library computes it
		if !strings.Contains(log, "GOMEMLIMIT is updated") || !strings.Contains(log, want) {
			t.Errorf("the manager's log does not say GOMEMLIMIT was set to %s bytes (90%% of 256Mi):\n%.2000s", want, log)
		}
		return ctx
	})
	jobs = jobs.Assess("an At's command runs in the job image and its log is exactly what it printed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		at := waitAtPhase(ctx, t, opsClient(t, cfg), quoted, v1alpha1.AtSucceeded, v1alpha1.AtFailed)
		if at.Status.Phase != v1alpha1.AtSucceeded {
			t.Fatalf("At quoted: phase %s (%s)", at.Status.Phase, at.Status.Message)
		}
		if got := jobPodLog(ctx, t, cfg, realPodsNamespace, at.Status.JobName); got != "A  b 42\n" {
			t.Errorf("pod log %q, want %q", got, "A  b 42\n")
		}
		return ctx
	})
	jobs = jobs.Assess("a ScheduledJob in Asia/Seoul fires in the minute given in Seoul time", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		sj := &v1alpha1.ScheduledJob{}
		waitFor(ctx, t, time.Until(slot)+waitTimeout, "the Seoul ScheduledJob never ran its slot", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(zoned), sj); err != nil {
				return false, nil
			}
			return sj.Status.LastScheduleTime != nil, nil
		})
		if !sj.Status.LastScheduleTime.Time.Equal(slot) {
			t.Errorf("lastScheduleTime %s, want %s (%s in %s)", sj.Status.LastScheduleTime.UTC(), slot.UTC(), slot.In(mustZone(t, scheduleZone)).Format("15:04"), scheduleZone)
		}
		for _, cond := range sj.Status.Conditions {
			if cond.Status == metav1.ConditionFalse && cond.Type == "Ready" {
				t.Errorf("condition %s=%s: %s %s", cond.Type, cond.Status, cond.Reason, cond.Message)
			}
		}
		js, err := ownedJobs(ctx, c, sj)
		if err != nil || len(js) != 1 {
			t.Fatalf("jobs %d (%v), want the one slot", len(js), err)
		}
		if d := js[0].CreationTimestamp.Sub(slot); d < 0 || d > 30*time.Second {
			t.Errorf("Job created %s after the slot, want within 30 s", d)
		}
		// The pod read the slot's time, in the schedule's zone, from SCHEDULED_TIME.
		want := "ran in " + scheduleZone + " for " + slot.In(mustZone(t, scheduleZone)).Format(time.RFC3339) + "\n"
		if got := jobPodLog(ctx, t, cfg, realPodsNamespace, js[0].Name); got != want {
			t.Errorf("pod log %q, want %q", got, want)
		}
		// "Did it run?": status.runs records the run and how it ended.
		waitFor(ctx, t, waitTimeout, "the run history never recorded the Seoul run as Succeeded", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(zoned), sj); err != nil {
				return false, nil
			}
			return len(sj.Status.Runs) == 1 && sj.Status.Runs[0].JobName == js[0].Name && sj.Status.Runs[0].Result == v1alpha1.RunSucceeded &&
				sj.Status.Runs[0].ScheduledTime.Time.Equal(slot) && sj.Status.Runs[0].CompletionTime != nil, nil
		})
		return ctx
	})

	pull := features.New("images come from the registry with credentials")
	pull = withNamespace(pull, "e2e-pull")
	pull = pull.Assess("both manager replicas run the image pulled from the registry", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		skipUnlessKind(t)
		pods, err := managerPods(ctx, clientset(t, cfg))
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 2 {
			t.Errorf("%d manager pods, want 2", len(pods))
		}
		for _, p := range pods {
			img := p.Spec.Containers[0].Image
			if !strings.HasPrefix(img, e2eRegistry+"/") {
				t.Errorf("pod %s runs %s, want an image from %s", p.Name, img, e2eRegistry)
			}
			if len(p.Status.ContainerStatuses) == 0 || !strings.Contains(p.Status.ContainerStatuses[0].ImageID, "@sha256:") {
				t.Errorf("pod %s: no pulled image digest in its status", p.Name)
			}
		}
		return ctx
	})
	pull = pull.Assess("a tenant pod pulls the job image with the pull secret SecretSync spread to its namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		skipUnlessKind(t)
		ns := "e2e-pull"
		waitPullSecret(ctx, t, cfg, ns)
		c := opsClient(t, cfg)
		withSecret := pullPod(ns, "with-secret", "")
		if err := c.Create(ctx, withSecret); err != nil {
			t.Fatal(err)
		}
		// A ServiceAccount without the pull secret: the registry refuses the same image.
		if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-pull-secret"}}); err != nil {
			t.Fatal(err)
		}
		without := pullPod(ns, "without-secret", "no-pull-secret")
		if err := c.Create(ctx, without); err != nil {
			t.Fatal(err)
		}
		waitFor(ctx, t, waitTimeout, "the pod with the pull secret never succeeded", func(ctx context.Context) (bool, error) {
			p := &corev1.Pod{}
			return c.Get(ctx, client.ObjectKeyFromObject(withSecret), p) == nil && p.Status.Phase == corev1.PodSucceeded, nil
		})
		if got, err := podLogs(ctx, clientset(t, cfg), ns, withSecret.Name, "main"); err != nil || got != "pulled\n" {
			t.Errorf("log %q (%v)", got, err)
		}
		var reason string
		waitFor(ctx, t, waitTimeout, "the pod without the pull secret was never refused its image", func(ctx context.Context) (bool, error) {
			p := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(without), p); err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, nil
			}
			if w := p.Status.ContainerStatuses[0].State.Waiting; w != nil {
				reason = w.Reason + ": " + w.Message
				return w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff", nil
			}
			return p.Status.Phase != corev1.PodPending, nil
		})
		if !strings.Contains(strings.ToLower(reason), "unauthorized") && !strings.Contains(reason, "401") && !strings.Contains(strings.ToLower(reason), "authoriz") {
			t.Errorf("pull refused with %q, want an authorization failure", reason)
		}
		return ctx
	})

	inPod := features.New("a tenant uses its printed kubeconfig from inside a pod")
	inPod = inPod.Assess("kubectl in a tenant pod acts as the tenant and nothing more", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		skipUnlessKind(t)
		waitTokenSecret(ctx, t, cfg)
		// The in-cluster address of the API server; the cluster's CA from the admin kubeconfig.
		kc := tenantKubeconfig(ctx, t, cfg, "--namespace", tenantNamespace, "--service-account", tenantSA,
			"--from-secret", tenantSecret, "--server", "https://kubernetes.default.svc")
		c := opsClient(t, cfg)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "e2e-tenant-kubeconfig"},
			Data: map[string][]byte{"config": kc}}
		if err := c.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		script := `k="kubectl --kubeconfig /kc/config"
echo "whoami=$($k auth whoami -o jsonpath='{.status.userInfo.username}')"
echo "create-pods=$($k auth can-i create pods -n ` + tenantNamespace + `)"
if $k get pods -n default 2>/tmp/err; then echo default=allowed; else grep -q Forbidden /tmp/err && echo default=forbidden; fi
if $k get secrets -n ` + tenantNamespace + ` 2>/tmp/err; then echo secrets=allowed; else grep -q Forbidden /tmp/err && echo secrets=forbidden; fi`
		// restricted: the chart's tenant namespace enforces Pod Security restricted.
		pod := restricted(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "kubectl"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				// Only the printed kubeconfig: no ServiceAccount token is mounted.
				AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{Name: "main", Image: toolsImage, ImagePullPolicy: corev1.PullNever,
					Command:      []string{"sh", "-c", script},
					VolumeMounts: []corev1.VolumeMount{{Name: "kc", MountPath: "/kc", ReadOnly: true}}}},
				Volumes: []corev1.Volume{{Name: "kc", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: sec.Name}}}},
			},
		})
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		waitFor(ctx, t, waitTimeout, "the kubectl pod never finished", func(ctx context.Context) (bool, error) {
			p := &corev1.Pod{}
			return c.Get(ctx, client.ObjectKeyFromObject(pod), p) == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed), nil
		})
		got, err := podLogs(ctx, clientset(t, cfg), tenantNamespace, pod.Name, "main")
		if err != nil {
			t.Fatal(err)
		}
		want := "whoami=system:serviceaccount:" + tenantNamespace + ":" + tenantSA + "\ncreate-pods=yes\ndefault=forbidden\nsecrets=forbidden\n"
		if got != want {
			t.Errorf("kubectl in the pod printed\n%s\nwant\n%s", got, want)
		}
		return ctx
	})
	testenv.Test(t, jobs.Feature(), pull.Feature(), inPod.Feature())
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// pullPod runs the job image with imagePullPolicy Always, so the node asks the registry every
// time (a copy already on the node proves nothing about credentials).
func pullPod(namespace, name, serviceAccount string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: serviceAccount,
			Containers: []corev1.Container{{Name: "main", Image: chartJobImage, ImagePullPolicy: corev1.PullAlways,
				Command: []string{"/bin/sh", "-c", "echo pulled"}}},
		},
	}
}

// waitPullSecret waits until the pull-secret SecretSync has put its copy into namespace and listed
// it in the default ServiceAccount's imagePullSecrets: pods created before that carry no pull
// secret (admission copies the ServiceAccount's list once) and could not pull on kind.
func waitPullSecret(ctx context.Context, t *testing.T, cfg *envconf.Config, namespace string) {
	t.Helper()
	if !isKind() {
		return
	}
	if namespacedMode() && !slices.Contains(namespacedModeNamespaces(), any(namespace)) {
		return // outside rbac.namespaces the manager spreads nothing
	}
	c := opsClient(t, cfg)
	waitFor(ctx, t, waitTimeout, "the pull secret never reached "+namespace+"'s default ServiceAccount", func(ctx context.Context) (bool, error) {
		sa := &corev1.ServiceAccount{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "default"}, sa); err != nil {
			return false, nil
		}
		for _, r := range sa.ImagePullSecrets {
			if r.Name == e2ePullSecret {
				return true, nil
			}
		}
		return false, nil
	})
}

// waitTokenSecret waits until the token controller filled the tenant's token Secret.
func waitTokenSecret(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	waitFor(ctx, t, waitTimeout, "the tenant's token Secret never got a token", func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		if err := cfg.Client().Resources().Get(ctx, tenantSecret, tenantNamespace, s); err != nil {
			return false, nil
		}
		return len(s.Data[corev1.ServiceAccountTokenKey]) > 0, nil
	})
}
