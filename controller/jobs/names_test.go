package jobs

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
	got := SlotName(nightly, topOfTheHour)
	if want := "nightly-24394200-" + OwnerTag(nightly.UID); got != want {
		t.Errorf("SlotName = %q, want %q", got, want)
	}
	if SlotName(nightly, topOfTheHour.Add(59*time.Second)) != got {
		t.Errorf("two instants of the same minute name two Jobs")
	}
	if SlotName(nightly, topOfTheHour.Add(time.Minute)) == got {
		t.Errorf("two minutes name the same Job")
	}
	// Issue 29: an At applied again (a new UID under the same name), and the built-in CronJob
	// of the same name (which names its Jobs <name>-<minutes>), never share a slot's Job name.
	again := owner("nightly", "0d1e2f3a-4b5c-4d6e-9f80-7a6b5c4d3e2f")
	if SlotName(again, topOfTheHour) == got {
		t.Errorf("two incarnations of nightly name the same Job %q", got)
	}
	if got == LegacySlotName("nightly", topOfTheHour) {
		t.Errorf("SlotName = %q, the name a CronJob called nightly gives the same slot", got)
	}
	// The longest owner name admission allows, and longer: at most 63 characters, still unique.
	for _, n := range []int{52, 63, 253} {
		a, b := owner(strings.Repeat("a", n), "uid-1"), owner(strings.Repeat("a", n), "uid-2")
		na, nb := SlotName(a, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)), SlotName(b, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC))
		if len(na) > 63 || na == nb {
			t.Errorf("owner of %d characters: names %q and %q, want at most 63 characters and different", n, na, nb)
		}
	}
}

func TestRunNowName(t *testing.T) {
	nightly := owner("nightly", "9c8f5a3e-1b2d-4c5e-8f70-1a2b3c4d5e6f")
	a, b := RunNowName(nightly, "t1"), RunNowName(nightly, "t2")
	if a != RunNowName(nightly, "t1") {
		t.Errorf("the same token names two Jobs")
	}
	if a == b {
		t.Errorf("two tokens name the same Job %q", a)
	}
	if a == RunNowName(owner("nightly", "another-uid"), "t1") {
		t.Errorf("the same token of two incarnations names the same Job %q", a)
	}
	if len(a) != len("nightly-r")+8 || a[:len("nightly-r")] != "nightly-r" {
		t.Errorf("RunNowName = %q, want nightly-r<8 hex digits>", a)
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
	got := BackfillName(nightly, topOfTheHour)
	if want := "nightly-b24394200-" + OwnerTag(nightly.UID); got != want {
		t.Errorf("BackfillName = %q, want %q", got, want)
	}
	if got == SlotName(nightly, topOfTheHour) || got == LegacySlotName("nightly", topOfTheHour) {
		t.Errorf("BackfillName = %q, a scheduled slot's name", got)
	}
	if BackfillName(nightly, topOfTheHour.Add(time.Minute)) == got || BackfillName(owner("nightly", "another-uid"), topOfTheHour) == got {
		t.Errorf("two slots, or two incarnations, name the same Job %q", got)
	}
	for _, n := range []int{52, 63, 253} {
		a, b := owner(strings.Repeat("a", n), "uid-1"), owner(strings.Repeat("a", n), "uid-2")
		na, nb := BackfillName(a, topOfTheHour), BackfillName(b, topOfTheHour)
		if len(na) > 63 || na == nb {
			t.Errorf("owner of %d characters: names %q and %q, want at most 63 characters and different", n, na, nb)
		}
	}
}
