package jobs

import (
	"testing"
	"time"
)

func TestSlotName(t *testing.T) {
	topOfTheHour := time.Date(2016, 5, 19, 10, 0, 0, 0, time.UTC)
	if got, want := SlotName("nightly", topOfTheHour), "nightly-24394200"; got != want {
		t.Errorf("SlotName = %q, want %q", got, want)
	}
	if SlotName("nightly", topOfTheHour.Add(59*time.Second)) != SlotName("nightly", topOfTheHour) {
		t.Errorf("two instants of the same minute name two Jobs")
	}
}

func TestRunNowName(t *testing.T) {
	a, b := RunNowName("nightly", "t1"), RunNowName("nightly", "t2")
	if a != RunNowName("nightly", "t1") {
		t.Errorf("the same token names two Jobs")
	}
	if a == b {
		t.Errorf("two tokens name the same Job %q", a)
	}
	if len(a) != len("nightly-r")+8 || a[:len("nightly-r")] != "nightly-r" {
		t.Errorf("RunNowName = %q, want nightly-r<8 hex digits>", a)
	}
}
