package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/tests/chaos/invariants"
)

// The starved scenario (issue 46): the manager at the chart's CPU request and with the chart's
// probes, beside a pod that asked for all the CPU the node had left and spins on every core it
// gets, while 1,000 every-minute ScheduledJobs run (the shared 300 and 700 of its own) and a
// source update fans out to the 990 copies at the first slot. Nothing may restart the manager (a
// probe included), no slot may go missing (a Job after its minute is late and counted so; a Forbid
// slot whose Job is still active is skipped), and the fan-out completes.
const (
	starvedNS     = "chaos-starved"
	burnerNS      = "chaos-burner"
	starvedSJs    = 1000 - scheduledJobs
	starvedSlots  = 4
	starvedBurner = "burner"
)

func starved(ctx context.Context, h *harness, r *result) error {
	w := h.begin()
	_, holder, err := h.leader(ctx)
	if err != nil {
		return err
	}
	keys, err := h.starvedLoad(ctx)
	if err != nil {
		return err
	}
	defer h.starvedCleanUp(context.WithoutCancel(ctx), r, keys)
	request, err := h.startBurner(ctx)
	if err != nil {
		return err
	}
	r.figure("burner: 1 pod, CPU request %s (what the node had left to allocate), 2 processes spinning, Running", request.String())
	first := nextMinute(20 * time.Second)
	last := first.Add((starvedSlots - 1) * time.Minute)
	if err := sleepUntil(ctx, first.Add(-3*time.Second)); err != nil {
		return err
	}
	digest, t0, err := h.bumpSource(ctx)
	if err != nil {
		return err
	}
	h.waitCopies(ctx, r, digest, t0)
	// A Job of the last slot that comes within two minutes still counts, as late.
	if err := sleepUntil(ctx, last.Add(2*time.Minute)); err != nil {
		return err
	}
	if err := h.stopBurner(ctx); err != nil {
		return err
	}
	all := append(append([]string(nil), h.sjKeys...), keys...)
	st, err := h.waitDecided(ctx, r, []string{sjNamespace, starvedNS}, all, last)
	if err != nil {
		return err
	}
	var jobs []invariants.Job
	for _, j := range h.rec.jobList() {
		if j.OwnerKind == "ScheduledJob" && !j.Slot.Before(first) && !j.Slot.After(last) {
			jobs = append(jobs, j)
		}
	}
	got := map[invariants.SlotKey]time.Time{}
	for _, j := range jobs {
		k := invariants.SlotKey{Namespace: j.Namespace, ScheduledJob: j.OwnerName, Slot: j.Slot.UTC()}
		if s, ok := got[k]; !ok || j.Seen.Before(s) {
			got[k] = j.Seen
		}
	}
	var onTime, late, skipped, missing int
	for _, slot := range invariants.Minutes(first, last) {
		var perOnTime, perLate, perSkipped, perMissing int
		byWhy := map[string]int{}
		for _, key := range all {
			ns, name, _ := strings.Cut(key, "/")
			seen, ok := got[invariants.SlotKey{Namespace: ns, ScheduledJob: name, Slot: slot.UTC()}]
			switch {
			case ok && seen.Sub(slot) <= time.Minute:
				perOnTime++
			case ok:
				perLate++
			case st.skipped[key].Equal(slot) || notRunReason(st.notRun[key], slot) == "JobAlreadyActive":
				perSkipped++
			default:
				perMissing++
				why := "no record"
				if reason := notRunReason(st.notRun[key], slot); reason != "" {
					why = "status.notRun " + reason
				}
				byWhy[why]++
				if perMissing <= 5 {
					r.Violations = append(r.Violations, invariants.Violation{Invariant: "slot-missing", Object: fmt.Sprintf("%s@%s", key, slot.Format("15:04")),
						Detail: "no Job for the slot while the manager was starved (" + why + ")"})
				}
			}
		}
		r.figure("slot %s: %d on time, %d late, %d skipped (Forbid, Job still active), %d missing of %d", slot.Format("15:04"),
			perOnTime, perLate, perSkipped, perMissing, len(all))
		if perMissing > 0 {
			r.figure("slot %s: the missing by record: %v", slot.Format("15:04"), byWhy)
		}
		onTime, late, skipped, missing = onTime+perOnTime, late+perLate, skipped+perSkipped, missing+perMissing
	}
	r.figure("%d slots of %d ScheduledJobs: %d on time, %d late, %d skipped, %d missing", starvedSlots, len(all), onTime, late, skipped, missing)
	r.Violations = append(r.Violations, invariants.DoubledSlots(jobs)...)
	if hc, ok := h.rec.holderAfter(r.Start, holder); ok {
		r.figure("the Lease changed hands at %s, from %s to %s", hc.at.Format("15:04:05"), holder, hc.holder)
	} else {
		r.figure("the Lease stayed with %s", holder)
	}
	return h.finish(ctx, r, w, nil, 0)
}

// notRunReason is the reason of the status.notRun range that holds slot ("" if none).
func notRunReason(ranges []invariants.SlotRange, slot time.Time) string {
	for _, nr := range ranges {
		if !slot.Before(nr.First) && !slot.After(nr.Last) {
			return nr.Reason
		}
	}
	return ""
}

// starvedLoad creates the scenario's 700 every-minute ScheduledJobs (Allow, no deadline, cheap
// Jobs, history 0) and returns their keys.
func (h *harness) starvedLoad(ctx context.Context) ([]string, error) {
	if err := ignoreExists(h.cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: starvedNS}})); err != nil {
		return nil, err
	}
	keys := make([]string, starvedSJs)
	err := parallel(starvedSJs, func(i int) error {
		sj := &v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sj-%03d", i), Namespace: starvedNS},
			Spec: v1alpha1.ScheduledJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: v1alpha1.AllowConcurrent,
				SuccessfulJobsHistoryLimit: ptr.To[int32](0), FailedJobsHistoryLimit: ptr.To[int32](0),
				JobTemplate: batchv1.JobTemplateSpec{Spec: h.cheapJob()}}}
		keys[i] = starvedNS + "/" + sj.Name
		return ignoreExists(h.cl.Create(ctx, sj))
	})
	return keys, err
}

// startBurner runs the burner (the job image's busybox, two `yes` into /dev/null) with a CPU
// request of what the node has left to allocate (burnerRequest) and no limit, pulling with the
// registry's account, and waits until it runs. It returns the request.
func (h *harness) startBurner(ctx context.Context) (resource.Quantity, error) {
	request, err := h.burnerRequest(ctx)
	if err != nil {
		return request, err
	}
	return request, h.runBurner(ctx, request)
}

// burnerRequest is the CPU the one node has left to allocate (its allocatable CPU less every
// running or pending pod's requests), less 50m for a pod the system may still add: the largest
// request that schedules, so the burner weighs on the CPU as much as a pod there can. On a 2-CPU
// node beside the control plane and two manager replicas that is under the 1000m the bench's
// burner asks for, which would stay Pending (Insufficient cpu).
func (h *harness) burnerRequest(ctx context.Context) (resource.Quantity, error) {
	var nodes corev1.NodeList
	if err := h.cl.List(ctx, &nodes); err != nil {
		return resource.Quantity{}, err
	}
	if len(nodes.Items) != 1 {
		return resource.Quantity{}, fmt.Errorf("the starved scenario wants one node, found %d", len(nodes.Items))
	}
	left := nodes.Items[0].Status.Allocatable.Cpu().MilliValue()
	var pods corev1.PodList
	if err := h.cl.List(ctx, &pods); err != nil {
		return resource.Quantity{}, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.Namespace == burnerNS {
			continue
		}
		for _, c := range p.Spec.Containers {
			left -= c.Resources.Requests.Cpu().MilliValue()
		}
	}
	left -= 50
	if left < 100 {
		return resource.Quantity{}, fmt.Errorf("the node has %dm CPU left to allocate: too little for a burner", left+50)
	}
	return *resource.NewMilliQuantity(left, resource.DecimalSI), nil
}

func (h *harness) runBurner(ctx context.Context, request resource.Quantity) error {
	if err := ignoreExists(h.cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: burnerNS}})); err != nil {
		return err
	}
	auth := base64.StdEncoding.EncodeToString([]byte(h.reg.User + ":" + h.reg.Password))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{h.reg.Addr(): map[string]string{
		"username": h.reg.User, "password": h.reg.Password, "auth": auth}}})
	if err != nil {
		return err
	}
	pull := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: burnerNS}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}}
	if err := ignoreExists(h.cl.Create(ctx, pull)); err != nil {
		return err
	}
	labels := map[string]string{"app": starvedBurner}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: starvedBurner, Namespace: burnerNS}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			ImagePullSecrets:              []corev1.LocalObjectReference{{Name: pull.Name}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "spin", Image: h.images.Job,
				Command:   []string{"sh", "-c", "yes > /dev/null & yes > /dev/null & wait"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: request}}}},
		}}}}
	if err := ignoreExists(h.cl.Create(ctx, d)); err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := h.cl.List(ctx, &pods, client.InNamespace(burnerNS), client.MatchingLabels(labels)); err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				return true, nil
			}
			last = fmt.Sprintf("%s %s", p.Name, p.Status.Phase)
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue && c.Message != "" {
					last += ": " + c.Message
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil {
					last += ": " + w.Reason + " " + w.Message
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the burner did not run within 3 min (%s): %w", last, err)
	}
	return nil
}

func (h *harness) stopBurner(ctx context.Context) error {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: starvedBurner, Namespace: burnerNS}}
	return client.IgnoreNotFound(h.cl.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)))
}

// starvedCleanUp removes the burner and the scenario's ScheduledJobs (their Jobs go with them), so
// that later scenarios run on the shared load alone.
func (h *harness) starvedCleanUp(ctx context.Context, r *result, keys []string) {
	if err := h.stopBurner(ctx); err != nil {
		r.figure("clean-up: deleting the burner: %v", err)
	}
	h.deleteScheduledJobs(ctx, r, keys)
}

// deleteScheduledJobs deletes a scenario's own ScheduledJobs, by "namespace/name" (their Jobs go
// with them), so that the scenarios after it run on the shared load alone. One by one: a
// DeleteCollection of 700 ScheduledJobs outlasted the API server's request timeout here.
func (h *harness) deleteScheduledJobs(ctx context.Context, r *result, keys []string) {
	bg := client.PropagationPolicy(metav1.DeletePropagationBackground)
	if err := parallel(len(keys), func(i int) error {
		ns, name, _ := strings.Cut(keys[i], "/")
		sj := &v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		return client.IgnoreNotFound(h.cl.Delete(ctx, sj, bg))
	}); err != nil {
		r.figure("clean-up: deleting the ScheduledJobs: %v", err)
	}
}
