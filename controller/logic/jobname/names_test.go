package jobname

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func owner(name string, uid types.UID) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: name, UID: uid}
}

func TestSlotName(t *testing.T) {
	topOfTheHour := time.Date(2016, 5, 19, 10, 0, 0, 0, time.UTC)
	nightly := owner("nightly", "9c8f5a3e-1b2d-4c5e-8f70-1a2b3c4d5e6f")
	got := Slot(nightly, topOfTheHour)
	if want := "nightly-24394200-" + OwnerTag(nightly.UID); got != want {
		t.Errorf("Slot = %q, want %q", got, want)
	}
	if Slot(nightly, topOfTheHour.Add(59*time.Second)) != got {
		t.Errorf("two instants of the same minute name two Jobs")
	}
	if Slot(nightly, topOfTheHour.Add(time.Minute)) == got {
		t.Errorf("two minutes name the same Job")
	}
	// Issue 29: an At applied again (a new UID under the same name), and the built-in CronJob
	// of the same name (which names its Jobs <name>-<minutes>), never share a slot's Job name.
	again := owner("nightly", "0d1e2f3a-4b5c-4d6e-9f80-7a6b5c4d3e2f")
	if Slot(again, topOfTheHour) == got {
		t.Errorf("two incarnations of nightly name the same Job %q", got)
	}
	if got == LegacySlot("nightly", topOfTheHour) {
		t.Errorf("Slot = %q, the name a CronJob called nightly gives the same slot", got)
	}
	// The longest owner name admission allows, and longer: at most 63 characters, still unique.
	for _, n := range []int{52, 63, 253} {
		a, b := owner(strings.Repeat("a", n), "uid-1"), owner(strings.Repeat("a", n), "uid-2")
		na, nb := Slot(a, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)), Slot(b, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC))
		if len(na) > 63 || na == nb {
			t.Errorf("owner of %d characters: names %q and %q, want at most 63 characters and different", n, na, nb)
		}
	}
}

func TestRunNowName(t *testing.T) {
	nightly := owner("nightly", "9c8f5a3e-1b2d-4c5e-8f70-1a2b3c4d5e6f")
	a, b := RunNow(nightly, "t1"), RunNow(nightly, "t2")
	if a != RunNow(nightly, "t1") {
		t.Errorf("the same token names two Jobs")
	}
	if a == b {
		t.Errorf("two tokens name the same Job %q", a)
	}
	if a == RunNow(owner("nightly", "another-uid"), "t1") {
		t.Errorf("the same token of two incarnations names the same Job %q", a)
	}
	if len(a) != len("nightly-r")+8 || a[:len("nightly-r")] != "nightly-r" {
		t.Errorf("RunNow = %q, want nightly-r<8 hex digits>", a)
	}
}

func TestOwnerTag(t *testing.T) {
	seen := map[string]bool{}
	for i := range 1000 {
		tag := OwnerTag(types.UID(strings.Repeat("x", i)))
		if len(tag) != 5 || strings.Trim(tag, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("OwnerTag = %q, want 5 base-36 digits", tag)
		}
		seen[tag] = true
	}
	if len(seen) < 999 {
		t.Errorf("%d distinct tags of 1000 UIDs", len(seen))
	}
}

func TestBackfillName(t *testing.T) {
	topOfTheHour := time.Date(2016, 5, 19, 10, 0, 0, 0, time.UTC)
	nightly := owner("nightly", "9c8f5a3e-1b2d-4c5e-8f70-1a2b3c4d5e6f")
	got := Backfill(nightly, topOfTheHour)
	if want := "nightly-b24394200-" + OwnerTag(nightly.UID); got != want {
		t.Errorf("Backfill = %q, want %q", got, want)
	}
	if got == Slot(nightly, topOfTheHour) || got == LegacySlot("nightly", topOfTheHour) {
		t.Errorf("Backfill = %q, a scheduled slot's name", got)
	}
	if Backfill(nightly, topOfTheHour.Add(time.Minute)) == got || Backfill(owner("nightly", "another-uid"), topOfTheHour) == got {
		t.Errorf("two slots, or two incarnations, name the same Job %q", got)
	}
	for _, n := range []int{52, 63, 253} {
		a, b := owner(strings.Repeat("a", n), "uid-1"), owner(strings.Repeat("a", n), "uid-2")
		na, nb := Backfill(a, topOfTheHour), Backfill(b, topOfTheHour)
		if len(na) > 63 || na == nb {
			t.Errorf("owner of %d characters: names %q and %q, want at most 63 characters and different", n, na, nb)
		}
	}
}
