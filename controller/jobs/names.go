package jobs

import (
	"fmt"
	"hash/fnv"
	"time"
)

// The names of the Jobs the manager creates. Both are deterministic, the idempotency lock of a
// run: a second create of the same run fails with AlreadyExists, so a crash between the create
// and the status write, or a second replica, never runs it twice.

// SlotName is the Job of owner's run at slot: "<owner>-<unix minutes of the slot>", upstream
// CronJob's name. An At's run is its one slot.
func SlotName(owner string, slot time.Time) string {
	return fmt.Sprintf("%s-%d", owner, slot.Unix()/60)
}

// RunNowName is the Job of a ScheduledJob's run-now token: "<owner>-r<8 hex digits of the
// token's FNV-1a hash>", so the same token never creates two Jobs.
func RunNowName(owner, token string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(token))
	return fmt.Sprintf("%s-r%08x", owner, h.Sum32())
}
