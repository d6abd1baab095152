package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/tests/chaos/invariants"
)

// copyWrite is one write to a copy the Secret watch saw.
type copyWrite struct {
	at         time.Time
	namespace  string
	digest     string
	generation string
}

// holderChange is a change of the leader Lease's holder.
type holderChange struct {
	at     time.Time
	holder string
}

// skipEvent is an Event the controller emitted about a ScheduledJob.
type skipEvent struct {
	scheduledJob, reason, message string
}

// podState is what the pod watch knows of a manager pod.
type podState struct {
	restarts   int32
	crashLoop  bool
	ready      bool
	deleted    bool
	terminated []time.Time
}

// recorder holds everything the harness's client-go watches (informers, resuming from the last
// resourceVersion across API server restarts) saw from the start of the run. Checks read it;
// waits wake on every change instead of polling the API.
type recorder struct {
	mu      sync.Mutex
	changed chan struct{}

	jobs     map[string]invariants.Job // by UID
	copies   map[string]string         // namespace → data digest of our copy
	writes   []copyWrite
	foreign  []invariants.ForeignChange
	decoys   map[string]string // key → resourceVersion at creation
	holders  []holderChange
	leaseKey string
	events   []skipEvent
	pods     map[string]*podState
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}), jobs: map[string]invariants.Job{}, copies: map[string]string{},
		decoys: map[string]string{}, pods: map[string]*podState{}}
}

// bump wakes the waiters; callers hold mu.
func (r *recorder) bump() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitFor returns when cond (called with mu held) holds, with the time it was first seen to hold,
// or false at the timeout.
func (r *recorder) waitFor(ctx context.Context, timeout time.Duration, cond func() bool) (time.Time, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ok := cond()
		ch := r.changed
		r.mu.Unlock()
		if ok {
			return time.Now(), true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return time.Time{}, false
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
}

func dataDigest(data map[string][]byte) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(data[k])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// start runs the informers until ctx ends and waits for their first sync.
func (r *recorder) start(ctx context.Context, cs kubernetes.Interface, releaseNS string) error {
	type spec struct {
		client   cache.Getter
		resource string
		ns       string
		obj      runtime.Object
		opts     func(*metav1.ListOptions)
		handler  cache.ResourceEventHandler
	}
	specs := []spec{
		{cs.CoreV1().RESTClient(), "secrets", metav1.NamespaceAll, &corev1.Secret{}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", fanoutSecret).String()
		}, cache.ResourceEventHandlerFuncs{AddFunc: func(o any) { r.secret("ADDED", nil, o) }, UpdateFunc: func(old, o any) { r.secret("MODIFIED", old, o) },
			DeleteFunc: func(o any) { r.secret("DELETED", nil, o) }}},
		{cs.BatchV1().RESTClient(), "jobs", metav1.NamespaceAll, &batchv1.Job{}, func(o *metav1.ListOptions) {
			o.LabelSelector = keys.LabelCreatedBy
		}, cache.ResourceEventHandlerFuncs{AddFunc: r.job, UpdateFunc: func(_, o any) { r.job(o) }, DeleteFunc: r.job}},
		{cs.CoreV1().RESTClient(), "events", sjNamespace, &corev1.Event{}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("involvedObject.kind", "ScheduledJob").String()
		}, cache.ResourceEventHandlerFuncs{AddFunc: r.event, UpdateFunc: func(_, o any) { r.event(o) }}},
		{cs.CoordinationV1().RESTClient(), "leases", releaseNS, &coordinationv1.Lease{}, func(*metav1.ListOptions) {},
			cache.ResourceEventHandlerFuncs{AddFunc: r.lease, UpdateFunc: func(_, o any) { r.lease(o) }}},
		{cs.CoreV1().RESTClient(), "pods", releaseNS, &corev1.Pod{}, func(o *metav1.ListOptions) { o.LabelSelector = managerSelector },
			cache.ResourceEventHandlerFuncs{AddFunc: r.pod, UpdateFunc: func(_, o any) { r.pod(o) }, DeleteFunc: r.podGone}},
	}
	var synced []cache.InformerSynced
	for _, s := range specs {
		lw := cache.NewFilteredListWatchFromClient(s.client, s.resource, s.ns, s.opts)
		inf := cache.NewSharedIndexInformer(lw, s.obj, 0, cache.Indexers{})
		if _, err := inf.AddEventHandler(s.handler); err != nil {
			return err
		}
		go inf.Run(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	return nil
}

func (r *recorder) secret(ev string, oldObj, o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	s, ok := o.(*corev1.Secret)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := s.Namespace + "/" + s.Name
	if _, decoy := r.decoys[key]; decoy {
		if old, ok := oldObj.(*corev1.Secret); ev != "MODIFIED" || !ok || old.ResourceVersion != s.ResourceVersion {
			if ev != "ADDED" {
				r.foreign = append(r.foreign, invariants.ForeignChange{Key: key, Event: ev, ResourceVersion: s.ResourceVersion})
			}
		}
		r.bump()
		return
	}
	if _, ours := s.Labels[keys.LabelSecretSync]; !ours || s.Namespace == sourceNamespace {
		return
	}
	if ev == "DELETED" {
		delete(r.copies, s.Namespace)
	} else {
		d := dataDigest(s.Data)
		if r.copies[s.Namespace] != d {
			r.writes = append(r.writes, copyWrite{at: time.Now(), namespace: s.Namespace, digest: d, generation: string(s.Data["generation"])})
		}
		r.copies[s.Namespace] = d
	}
	r.bump()
}

func (r *recorder) job(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	j, ok := o.(*batchv1.Job)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.jobs[string(j.UID)]; seen {
		return
	}
	rec := invariants.Job{Namespace: j.Namespace, Name: j.Name, UID: string(j.UID), Seen: time.Now()}
	if ref := metav1.GetControllerOf(j); ref != nil {
		rec.OwnerKind, rec.OwnerName = ref.Kind, ref.Name
	}
	if ts, ok := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, ts); err == nil {
			rec.Slot = t
		}
	}
	_, rec.RunNow = j.Annotations[keys.AnnotationRunNowToken]
	r.jobs[rec.UID] = rec
	r.bump()
}

func (r *recorder) event(o any) {
	e, ok := o.(*corev1.Event)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, skipEvent{scheduledJob: e.InvolvedObject.Name, reason: e.Reason, message: e.Message})
	r.bump()
}

func (r *recorder) lease(o any) {
	l, ok := o.(*coordinationv1.Lease)
	if !ok || (r.leaseKey != "" && l.Name != r.leaseKey) {
		return
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.holders); n == 0 || r.holders[n-1].holder != holder {
		r.holders = append(r.holders, holderChange{at: time.Now(), holder: holder})
	}
	r.bump()
}

func (r *recorder) pod(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.pods[p.Name]
	if st == nil {
		st = &podState{}
		r.pods[p.Name] = st
	}
	st.deleted = p.DeletionTimestamp != nil
	st.ready = false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			st.ready = true
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != "manager" {
			continue
		}
		if c.RestartCount > st.restarts {
			st.terminated = append(st.terminated, time.Now())
		}
		st.restarts = c.RestartCount
		if c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" {
			st.crashLoop = true
		}
	}
	r.bump()
}

func (r *recorder) podGone(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.pods[p.Name]; st != nil {
		st.deleted = true
	}
	r.bump()
}

// jobList returns the Jobs seen so far.
func (r *recorder) jobList() []invariants.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]invariants.Job, 0, len(r.jobs))
	for _, j := range r.jobs {
		out = append(out, j)
	}
	return out
}

// explained reports whether an Event about the ScheduledJob names the slot.
func (r *recorder) explained(name string, slot time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := slot.UTC().Format(time.RFC3339)
	for _, e := range r.events {
		if e.scheduledJob == name && strings.Contains(e.message, s) {
			return true
		}
	}
	return false
}

// holderAfter returns the first Lease holder change after t to a holder other than old.
func (r *recorder) holderAfter(t time.Time, old string) (holderChange, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holderAfterLocked(t, old)
}

// holderAfterLocked is holderAfter for a caller that holds r.mu (a waitFor condition).
func (r *recorder) holderAfterLocked(t time.Time, old string) (holderChange, bool) {
	for _, h := range r.holders {
		if h.at.After(t) && h.holder != old && h.holder != "" {
			return h, true
		}
	}
	return holderChange{}, false
}

// firstWriteAfter returns the first write of digest to a copy after t.
func (r *recorder) firstWriteAfter(t time.Time, digest string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.writes {
		if w.at.After(t) && w.digest == digest {
			return w.at, true
		}
	}
	return time.Time{}, false
}

// restarts returns the manager pods' restart counts.
func (r *recorder) restarts() map[string]int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int32{}
	for n, p := range r.pods {
		out[n] = p.restarts
	}
	return out
}
