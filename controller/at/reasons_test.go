package at

import (
	"testing"

	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// The At's waiting reasons are string literals (docs/troubleshooting.md is checked against the
// literals of every reconciler) that must stay the ones the jobs package judges a Job by.
func TestAtReasonsAreTheJobsPackages(t *testing.T) {
	for _, c := range []struct{ at, jobs string }{
		{ReasonJobSuspended, jobstate.ReasonJobSuspended},
		{ReasonManagedElsewhere, jobstate.ReasonManagedElsewhere},
	} {
		if c.at != c.jobs {
			t.Errorf("at reason %q, jobs reason %q: they must be the same", c.at, c.jobs)
		}
	}
}
