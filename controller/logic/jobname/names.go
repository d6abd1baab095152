// Package jobname names the Jobs the manager creates: each name is its run's lock. Pure, so the
// reconcilers and kubectl-platform share it.
package jobname

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The names are deterministic, the idempotency lock of a run: a second create of the same run
// fails with AlreadyExists, so a crash between the create and the status write, or a second
// replica, never runs it twice. They carry a hash of the owner's UID, so an At deleted and applied
// again, or an At, a ScheduledJob and a CronJob of the same name, never name the same Job.

// maxNameLength is the longest Job name: the Job controller copies it into the job-name label
// of the Job's pods, and label values are at most 63 characters.
const maxNameLength = 63

// Slot is the Job of owner's run at slot: "<owner>-<unix minutes of the slot>-<owner UID
// tag>", upstream CronJob's name plus OwnerTag. An At's run is its one slot. The owner's name is
// cut short if the whole would exceed 63 characters (the tag keeps names of two owners apart).
func Slot(owner metav1.Object, slot time.Time) string {
	return withOwner(owner.GetName(), fmt.Sprintf("-%d-%s", slot.Unix()/60, OwnerTag(owner.GetUID())))
}

// LegacySlot is the name Slot gave up to 0.1.0, "<owner>-<unix minutes of the slot>":
// a Job created under it before an upgrade is still its slot's Job.
func LegacySlot(owner string, slot time.Time) string {
	return fmt.Sprintf("%s-%d", owner, slot.Unix()/60)
}

// RunNow is the Job of a ScheduledJob's run-now token: "<owner>-r<8 hex digits of the
// FNV-1a hash of the owner's UID and the token>", so the same token never creates two Jobs.
func RunNow(owner metav1.Object, token string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(string(owner.GetUID()) + "/" + token))
	return withOwner(owner.GetName(), fmt.Sprintf("-r%08x", h.Sum32()))
}

// OwnerTag is 5 base-36 digits of the FNV-1a hash of uid: two incarnations of a name share a tag
// with a chance of 1 in 60 million.
func OwnerTag(uid types.UID) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	s := strconv.FormatUint(uint64(h.Sum32()%(36*36*36*36*36)), 36)
	return strings.Repeat("0", 5-len(s)) + s
}

// withOwner is name followed by suffix, name cut so the whole fits in maxNameLength.
func withOwner(name, suffix string) string {
	return name[:min(len(name), maxNameLength-len(suffix))] + suffix
}

// Backfill is the Job of owner's backfill run of slot: "<owner>-b<unix minutes of the
// slot>-<owner UID tag>". It depends on the slot alone, not on the request, so a slot asked for
// twice gets one Job; it differs from Slot, so a backfilled slot is never taken for a scheduled one.
func Backfill(owner metav1.Object, slot time.Time) string {
	return withOwner(owner.GetName(), fmt.Sprintf("-b%d-%s", slot.Unix()/60, OwnerTag(owner.GetUID())))
}
