package podwatcher

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-1"}, Status: corev1.PodStatus{Phase: phase}}
}

func TestOnUpdate(t *testing.T) {
	cases := []struct {
		name     string
		old, new corev1.PodPhase
		want     Transition
		wantOK   bool
	}{
		{name: "pending to running is a phase change", old: corev1.PodPending, new: corev1.PodRunning, wantOK: true,
			want: Transition{Kind: PhaseChanged, Namespace: "team-a", Name: "web-1", From: "Pending", To: "Running"}},
		{name: "running to failed is a phase change", old: corev1.PodRunning, new: corev1.PodFailed, wantOK: true,
			want: Transition{Kind: PhaseChanged, Namespace: "team-a", Name: "web-1", From: "Running", To: "Failed"}},
		{name: "an update that keeps the phase is not reported", old: corev1.PodRunning, new: corev1.PodRunning},
		{name: "an empty phase equals pending, so filling it in is not reported", old: "", new: corev1.PodPending},
		{name: "from an empty phase to running reads as pending to running", old: "", new: corev1.PodRunning, wantOK: true,
			want: Transition{Kind: PhaseChanged, Namespace: "team-a", Name: "web-1", From: "Pending", To: "Running"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := OnUpdate(pod(tc.old), pod(tc.new))
			if ok != tc.wantOK || got != tc.want {
				t.Fatalf("OnUpdate = %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestOnAddAndOnDelete(t *testing.T) {
	cases := []struct {
		name string
		got  Transition
		want Transition
	}{
		{name: "an added pod goes from none to its phase", got: OnAdd(pod(corev1.PodRunning)),
			want: Transition{Kind: Added, Namespace: "team-a", Name: "web-1", From: None, To: "Running"}},
		{name: "an added pod with no phase yet is pending", got: OnAdd(pod("")),
			want: Transition{Kind: Added, Namespace: "team-a", Name: "web-1", From: None, To: "Pending"}},
		{name: "a deleted pod goes from its last phase to none", got: OnDelete(pod(corev1.PodSucceeded)),
			want: Transition{Kind: Deleted, Namespace: "team-a", Name: "web-1", From: "Succeeded", To: None}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %+v, want %+v", tc.got, tc.want)
			}
		})
	}
}
