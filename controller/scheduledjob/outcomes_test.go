package scheduledjob

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// Every way a slot can end is listed for users, with its Event and metric label, in the docs a
// user reads when a run did not happen; and every counted one has its series from the start (an
// alert on it needs no absent()). The list is the code's, not a person's memory.
func TestEverySlotOutcomeIsDocumentedAndHasItsSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, f := range []string{"../../docs/scheduling.md", "../../docs/troubleshooting.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = string(b)
	}
	_, table, ok := strings.Cut(docs["../../docs/scheduling.md"], "## How a slot ends")
	if !ok {
		t.Fatal("docs/scheduling.md has no section How a slot ends")
	}
	for _, o := range slotplan.SlotOutcomes {
		if !strings.Contains(table, "| `"+o.Reason+"` |") {
			t.Errorf("docs/scheduling.md#how-a-slot-ends has no row for %s", o.Reason)
		}
		if !strings.Contains(docs["../../docs/troubleshooting.md"], "`"+o.Reason+"`") {
			t.Errorf("docs/troubleshooting.md does not name %s", o.Reason)
		}
		if o.Counted && testutil.ToFloat64(m.SkippedSlots.WithLabelValues(o.Reason)) != 0 {
			t.Errorf("the %s series does not start at 0", o.Reason)
		}
	}
	if got, want := testutil.CollectAndCount(m.SkippedSlots), countedOutcomes(); got != want {
		t.Errorf("skipped_slots_total has %d series from the start, want one per counted outcome (%d)", got, want)
	}
}

func countedOutcomes() int {
	n := 0
	for _, o := range slotplan.SlotOutcomes {
		if o.Counted {
			n++
		}
	}
	return n
}
