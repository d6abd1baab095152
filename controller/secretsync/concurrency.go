package secretsync

import "github.com/platform-operators/platform-operators/controller/propagation"

// inFlightBytes bounds the data one reconcile has in flight to the API server at once. Small
// copies (a pull secret, a certificate) use every worker; a source near a Secret's 1 MiB limit
// uses a few, so its fan-out does not fill the API server's queue and stall the small fan-outs
// of other SecretSyncs that run beside it.
const inFlightBytes = 4 << 20

// concurrentWrites is how many writes of plan run at once: workers (at least 1), fewer when the largest
// copy the plan writes times workers would exceed inFlightBytes.
func concurrentWrites(workers int, plan propagation.Plan) int {
	workers = max(1, workers)
	largest := 0
	for _, a := range plan.Actions {
		if a.Want == nil {
			continue
		}
		n := 0
		for _, v := range a.Want.Data {
			n += len(v)
		}
		largest = max(largest, n)
	}
	if largest == 0 {
		return workers
	}
	return max(1, min(workers, inFlightBytes/largest))
}
