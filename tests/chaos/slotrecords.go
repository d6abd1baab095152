package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/tests/chaos/invariants"
)

// The leader-kill-record scenario (issue 35): the leader dies right after it created a slot's
// first Jobs, so the record of those slots falls to the next leader, after their deadline. Its own
// ScheduledJobs, every minute, Forbid, startingDeadlineSeconds 10, history 0, cover the outcomes a
// slot can end with: cheap Jobs (created, recorded by the next leader; or never created by the
// killed one and then MissedDeadline), long Jobs (the next slot JobAlreadyActive) and a namespace
// whose ResourceQuota allows no Job (JobRejected). Three slots in a row, and a fourth without a
// fault; then every slot must have exactly one record with its true reason, none may run twice,
// and every outcome must have occurred at least once (else the scenario did not test what it says).
const (
	// recordNS holds the cheap and long ScheduledJobs, recordQuotaNS the refused ones.
	recordNS      = "chaos-record"
	recordQuotaNS = "chaos-record-quota"
	recordPerKind = 10
	recordRounds  = 3
)

// recordOutcomes are the outcomes the scenario must see at least once.
var recordOutcomes = []string{"run", "MissedDeadline", "JobAlreadyActive", "JobRejected"}

func (h *harness) recordLoad(ctx context.Context) ([]string, error) {
	for _, ns := range []string{recordNS, recordQuotaNS} {
		if err := ignoreExists(h.cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			return nil, err
		}
	}
	// A real cluster's quota controller fills in the status; admission refuses every Job.
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: recordQuotaNS, Name: "no-jobs"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}}}
	if err := ignoreExists(h.cl.Create(ctx, quota)); err != nil {
		return nil, err
	}
	long := h.cheapJob()
	long.ActiveDeadlineSeconds = ptr.To[int64](90) // still active at the next slot: JobAlreadyActive
	kinds := []struct {
		ns, prefix string
		job        batchv1.JobSpec
	}{{recordNS, "cheap", h.cheapJob()}, {recordNS, "long", long}, {recordQuotaNS, "refused", h.cheapJob()}}
	var keys []string
	for _, k := range kinds {
		for i := range recordPerKind {
			sj := &v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%02d", k.prefix, i), Namespace: k.ns},
				Spec: v1alpha1.ScheduledJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: v1alpha1.ForbidConcurrent,
					StartingDeadlineSeconds:    ptr.To[int64](10),
					SuccessfulJobsHistoryLimit: ptr.To[int32](0), FailedJobsHistoryLimit: ptr.To[int32](0),
					JobTemplate: batchv1.JobTemplateSpec{Spec: k.job}}}
			if err := ignoreExists(h.cl.Create(ctx, sj)); err != nil {
				return nil, err
			}
			keys = append(keys, sj.Namespace+"/"+sj.Name)
		}
	}
	return keys, nil
}

// recordJobs counts the Jobs seen in the scenario's namespace for slot.
func (h *harness) recordJobs(slot time.Time) int {
	n := 0
	for _, j := range h.rec.jobList() {
		if j.Namespace == recordNS && j.Slot.Equal(slot) {
			n++
		}
	}
	return n
}

func leaderKillRecord(ctx context.Context, h *harness, r *result) error {
	w := h.begin()
	keys, err := h.recordLoad(ctx)
	if err != nil {
		return err
	}
	defer h.deleteScheduledJobs(context.WithoutCancel(ctx), r, keys)
	var first, last time.Time
	// recordRounds slots with a kill, then two without: the refused and the Forbid-skipped
	// outcomes are decided at the slot, so a kill right after it may leave them to the next
	// leader, past the deadline (MissedDeadline, which is then the truth of the record). The
	// first slot without a fault creates the long Jobs (the killed rounds' long slots may all
	// have missed their deadline), and they are still active at the second: JobAlreadyActive.
	for round := range recordRounds + 2 {
		slot := nextMinute(20 * time.Second)
		if round == 0 {
			first = slot
		}
		last = slot
		if round >= recordRounds {
			if err := sleepUntil(ctx, slot.Add(time.Second)); err != nil {
				return err
			}
			r.figure("round %d: slot %s without a fault", round+1, slot.Format("15:04"))
			continue
		}
		lp, err := findLeaderBefore(ctx, h, slot)
		if err != nil {
			return err
		}
		// Kill as soon as the slot's first Jobs exist: their records are the next leader's.
		if err := sleepUntil(ctx, slot); err != nil {
			return err
		}
		// Up to 5 s; if none came, the kill goes ahead and the figure below says 0 were seen.
		_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return h.recordJobs(slot) > 0, nil
		})
		lease, err := h.leaseDuration(ctx)
		if err != nil {
			return err
		}
		kill := time.Now()
		n := h.recordJobs(slot)
		if err := sendSignal(ctx, lp.node, lp.pid, "KILL"); err != nil {
			return err
		}
		r.figure("round %d: killed %s (pid %d) at +%.2f s, %d/%d Jobs of slot %s seen", round+1, lp.podName, lp.pid,
			kill.Sub(slot).Seconds(), n, 2*recordPerKind, slot.Format("15:04"))
		// The next round kills the next leader: wait for it (about the Lease duration after a kill).
		if !waitHolder(ctx, h, kill, lp.holder, takeoverWithin(lease)) {
			r.figure("round %d: no new Lease holder within %s", round+1, takeoverWithin(lease))
		}
	}
	if err := sleepUntil(ctx, last.Add(time.Minute+45*time.Second)); err != nil {
		return err
	}
	if err := h.finish(ctx, r, w, nil, recordRounds); err != nil {
		return err
	}
	st, err := h.waitDecided(ctx, r, []string{recordNS, recordQuotaNS}, keys, last)
	if err != nil {
		return err
	}
	runs, notRun := st.runs, st.notRun
	slots := invariants.Minutes(first, last)
	var jobs []invariants.Job
	for _, j := range h.rec.jobList() {
		if (j.Namespace == recordNS || j.Namespace == recordQuotaNS) && !j.Slot.Before(first) && !j.Slot.After(last) {
			jobs = append(jobs, j)
		}
	}
	// The recorder watches Events in the shared load's namespace only: a MissedSlots Event here is
	// not seen, and a slot it names would be reported unrecorded. With a 10 s deadline and a new
	// leader within a minute none is expected (a slot past its deadline is MissedDeadline).
	// status.notRun, the slot ledger, lists the slots passed over (no run each) in every namespace.
	passedOver := func(ns, name string, slot time.Time) bool {
		return invariants.NotRunLists(notRun[ns+"/"+name], slot) || h.rec.explained(name, slot)
	}
	r.Violations = append(r.Violations, invariants.DoubledSlots(jobs)...)
	r.Violations = append(r.Violations, limit(invariants.SlotRecords(runs, slots, jobs, passedOver), 20)...)
	r.Violations = append(r.Violations, limit(invariants.NotRunRan(notRun, jobs), 20)...)
	// Which outcomes occurred, from the records of the checked slots.
	seen := map[string]int{}
	for _, key := range keys {
		for _, run := range runs[key] {
			if run.Slot.Before(first) || run.Slot.After(last) {
				continue
			}
			switch {
			case run.JobName != "":
				seen["run"]++
			default:
				seen[run.Reason]++
			}
		}
	}
	var text []string
	for _, o := range recordOutcomes {
		text = append(text, fmt.Sprintf("%s %d", o, seen[o]))
		if seen[o] == 0 {
			r.Violations = append(r.Violations, invariants.Violation{Invariant: "outcome-not-covered", Object: o,
				Detail: fmt.Sprintf("no slot of %d rounds ended %s: the scenario did not test it", recordRounds, o)})
		}
	}
	sort.Strings(text)
	r.figure("outcomes of the %d checked slots of %d ScheduledJobs: %s", len(slots), len(keys), strings.Join(text, ", "))
	return nil
}
