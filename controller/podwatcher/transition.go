package podwatcher

import (
	corev1 "k8s.io/api/core/v1"
)

// Kind says what happened to a pod.
type Kind string

// The kinds of pod events the watcher reports.
const (
	Added        Kind = "added"
	PhaseChanged Kind = "phaseChanged"
	Deleted      Kind = "deleted"
)

// None stands for "no phase" in the metric: the phase before an add and after a delete.
const None = "none"

// Transition is one reportable pod event: which pod, and its phase before and after.
type Transition struct {
	Kind      Kind
	Namespace string
	Name      string
	From      string
	To        string
}

// OnAdd is the transition for a pod that appeared.
func OnAdd(pod *corev1.Pod) Transition {
	return Transition{Kind: Added, Namespace: pod.Namespace, Name: pod.Name, From: None, To: phase(pod)}
}

// OnUpdate is the transition between two versions of a pod, and false when the phase did not
// change: most updates (status conditions, annotations, resourceVersion bumps) are not news.
func OnUpdate(oldPod, newPod *corev1.Pod) (Transition, bool) {
	if phase(oldPod) == phase(newPod) {
		return Transition{}, false
	}
	return Transition{Kind: PhaseChanged, Namespace: newPod.Namespace, Name: newPod.Name, From: phase(oldPod), To: phase(newPod)}, true
}

// OnDelete is the transition for a pod that is gone; its last known phase is the "from".
func OnDelete(pod *corev1.Pod) Transition {
	return Transition{Kind: Deleted, Namespace: pod.Namespace, Name: pod.Name, From: phase(pod), To: None}
}

// phase is the pod's phase, with the empty phase of a just-created pod shown as Pending, which
// is what the API means by it.
func phase(pod *corev1.Pod) string {
	if pod.Status.Phase == "" {
		return string(corev1.PodPending)
	}
	return string(pod.Status.Phase)
}
