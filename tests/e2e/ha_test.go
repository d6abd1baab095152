package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
)

const (
	haNamespace = "e2e-ha"
	// haJobs every-minute ScheduledJobs run through the drain.
	haJobs = 10
	// haTargets labelled namespaces the fan-out copies into.
	haTargets = 10
	haLabel   = "e2e-ha-target"
)

// jobWatch records every Job created in a namespace, by name, with the UIDs seen: a slot run
// twice shows as one name with two UIDs (the first pruned or deleted, then created again).
type jobWatch struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]bool
	stop func()
}

func watchJobs(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace string) *jobWatch {
	t.Helper()
	w, err := cs.BatchV1().Jobs(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jw := &jobWatch{uids: map[string]map[types.UID]bool{}, stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type == watch.Error {
				continue
			}
			jw.mu.Lock()
			if jw.uids[j.Name] == nil {
				jw.uids[j.Name] = map[types.UID]bool{}
			}
			jw.uids[j.Name][j.UID] = true
			jw.mu.Unlock()
		}
	}()
	return jw
}

func (jw *jobWatch) snapshot() map[string]int {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	out := make(map[string]int, len(jw.uids))
	for n, u := range jw.uids {
		out[n] = len(u)
	}
	return out
}

// evict asks the Eviction API to evict a pod, as `kubectl drain` does (the PDB is honoured).
func evict(ctx context.Context, cs kubernetes.Interface, pod corev1.Pod) error {
	return cs.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}})
}

// drainNode cordons node and evicts the manager pods on it, retrying while the PDB refuses (429).
func drainNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("cordoning %s: %v", node, err)
	}
	pods, err := managerPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != node {
			continue
		}
		waitFor(ctx, t, waitTimeout, "evicting "+p.Name, func(ctx context.Context) (bool, error) {
			err := evict(ctx, cs, p)
			return err == nil || apierrors.IsNotFound(err), nil
		})
	}
}

func uncordon(ctx context.Context, cs kubernetes.Interface, node string) error {
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Spec.Unschedulable = false
	_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	return err
}

// TestDrain drains the leader's node (three-node kind: the replicas on the two workers) two
// seconds before a slot of every-minute ScheduledJobs and in the middle of a fan-out, and checks
// that no slot is lost or run twice, every copy converges, and the PDB holds the last replica.
func TestDrain(t *testing.T) {
	var jw *jobWatch
	var drained string
	var drainSlot time.Time
	var sjs []*v1alpha1.ScheduledJob // as created: their UIDs are in their Jobs' names
	f := features.New("a drain of the leader's node during a slot and a fan-out")
	f = withNamespace(f, haNamespace)
	f = f.Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		skipUnlessKind(t)
		if kindWorkers() < 2 {
			t.Skip("needs two workers (KIND_WORKERS=2, the default)")
		}
		c, cs := opsClient(t, cfg), clientset(t, cfg)
		for i := range haTargets {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e2e-ha-t%d", i), Labels: map[string]string{haLabel: "true"}}}
			if err := c.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
		}
		src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretSyncSource, Name: "ha-source"},
			Data: map[string][]byte{"v": []byte("0")}}
		if err := c.Create(ctx, src); err != nil {
			t.Fatal(err)
		}
		ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "e2e-ha"}, Spec: v1alpha1.SecretSyncSpec{
			Source: v1alpha1.SecretSyncSource{Namespace: secretSyncSource, Name: src.Name},
			Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{haLabel: "true"}}},
		}}
		if err := c.Create(ctx, ss); err != nil {
			t.Fatal(err)
		}
		jw = watchJobs(ctx, t, cs, haNamespace)
		for i := range haJobs {
			sj := everyMinuteJob(fmt.Sprintf("ha-%d", i), func(sj *v1alpha1.ScheduledJob) {
				sj.Namespace = haNamespace
				sj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
				sj.Spec.StartingDeadlineSeconds = ptr.To[int64](50)
			})
			if err := c.Create(ctx, sj); err != nil {
				t.Fatal(err)
			}
			sjs = append(sjs, sj)
		}
		return ctx
	})
	f = f.Assess("the replicas run on different nodes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		cs := clientset(t, cfg)
		// The chart's spread is soft (ScheduleAnyway, so that a one-node cluster runs every
		// replica): on a loaded machine the scheduler's other scores can put both replicas on one
		// node. The drain below needs a standby elsewhere, so a doubled-up standby is deleted and
		// its replacement, scored with the spread, goes to the other node (three tries at most).
		for try := 0; ; try++ {
			pods, err := managerPods(ctx, cs)
			if err != nil {
				t.Fatal(err)
			}
			nodes := map[string]bool{}
			for _, p := range pods {
				nodes[p.Spec.NodeName] = true
			}
			if len(pods) == 2 && len(nodes) == 2 {
				return ctx
			}
			if try == 3 || len(pods) != 2 {
				t.Fatalf("%d manager pods on %d nodes, want 2 on 2 (the chart's spread)", len(pods), len(nodes))
			}
			leader, err := leaderPod(ctx, cs)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods {
				if p.Name != leader.Name {
					t.Logf("both manager pods on %s: deleting the standby %s so that its replacement spreads", p.Spec.NodeName, p.Name)
					if err := cs.CoreV1().Pods(releaseNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
					eventually(ctx, t, "the deleted standby gone", func(ctx context.Context) error {
						switch _, err := cs.CoreV1().Pods(releaseNamespace).Get(ctx, p.Name, metav1.GetOptions{}); {
						case apierrors.IsNotFound(err):
							return nil
						case err != nil:
							return fmt.Errorf("pod %s: %w", p.Name, err)
						}
						return fmt.Errorf("pod %s still there", p.Name)
					})
				}
			}
			eventually(ctx, t, "two ready manager pods", func(ctx context.Context) error {
				pods, err := managerPods(ctx, cs)
				if err != nil {
					return err
				}
				ready := 0
				for _, p := range pods {
					if p.DeletionTimestamp == nil && podReady(p) {
						ready++
					}
				}
				if ready != 2 {
					return fmt.Errorf("%d of %d manager pods ready", ready, len(pods))
				}
				return nil
			})
		}
	})
	f = f.Assess("the leader's node is drained 2 s before a slot while the source changes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c, cs := opsClient(t, cfg), clientset(t, cfg)
		// Let one slot pass first, so every ScheduledJob has run before the drain.
		drainSlot = time.Now().Truncate(time.Minute).Add(2 * time.Minute)
		time.Sleep(time.Until(drainSlot.Add(-2 * time.Second)))
		leader, err := leaderPod(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		drained = leader.Spec.NodeName
		src := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: secretSyncSource, Name: "ha-source"}, src); err != nil {
			t.Fatal(err)
		}
		src.Data["v"] = []byte("1")
		if err := c.Update(ctx, src); err != nil {
			t.Fatal(err)
		}
		t.Logf("draining %s (leader %s) at %s, slot %s", drained, leader.Name, time.Now().Format(time.RFC3339Nano), drainSlot.Format(time.RFC3339))
		drainNode(ctx, t, cs, drained)
		// The PDB (minAvailable 1) holds the other replica while the evicted one's replacement is not ready.
		pods, err := managerPods(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		var other *corev1.Pod
		readyCount := 0
		for i := range pods {
			if podReady(pods[i]) {
				readyCount++
				if pods[i].Spec.NodeName != drained {
					other = &pods[i]
				}
			}
		}
		if other != nil && readyCount == 1 {
			if err := evict(ctx, cs, *other); !apierrors.IsTooManyRequests(err) {
				t.Errorf("evicting the last ready replica %s: err = %v, want 429 from the PDB", other.Name, err)
			}
		} else {
			t.Logf("the replacement was ready before the PDB could be tried (%d ready)", readyCount)
		}
		return ctx
	})
	f = f.Assess("every copy converges to the changed source", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := opsClient(t, cfg)
		eventually(ctx, t, "copies at v=1 in every target", func(ctx context.Context) error {
			for i := range haTargets {
				s := &corev1.Secret{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: fmt.Sprintf("e2e-ha-t%d", i), Name: "ha-source"}, s); err != nil {
					return err
				}
				if string(s.Data["v"]) != "1" {
					return fmt.Errorf("%s/%s has v=%q", s.Namespace, s.Name, s.Data["v"])
				}
			}
			return nil
		})
		return ctx
	})
	f = f.Assess("every slot around the drain ran exactly once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		// The slot of the drain and the one after it.
		time.Sleep(time.Until(drainSlot.Add(time.Minute + 20*time.Second)))
		seen := jw.snapshot()
		jw.stop()
		var missing, twice []string
		for _, sj := range sjs {
			for _, slot := range []time.Time{drainSlot.Add(-time.Minute), drainSlot, drainSlot.Add(time.Minute)} {
				name := jobname.Slot(sj, slot)
				switch n := seen[name]; {
				case n == 0:
					missing = append(missing, name)
				case n > 1:
					twice = append(twice, fmt.Sprintf("%s (%d UIDs)", name, n))
				}
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("slots with no Job: %s", strings.Join(missing, ", "))
		}
		if len(twice) > 0 {
			t.Errorf("slots run twice: %s", strings.Join(twice, ", "))
		}
		return ctx
	})
	f = f.Assess("after the node is back, a rollout puts the new replicas on different nodes again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		cs := clientset(t, cfg)
		if err := uncordon(ctx, cs, drained); err != nil {
			t.Fatal(err)
		}
		restartManager(ctx, t, ctrlClient(t, cfg), cs)
		pods, err := managerPods(ctx, cs)
		if err != nil || len(pods) != 2 {
			t.Fatalf("after the rollout: %d manager pods, %v; want 2", len(pods), err)
		}
		if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
			t.Errorf("after the rollout both replicas run on %s, want them on different nodes", pods[0].Spec.NodeName)
		}
		return ctx
	})
	f = f.Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if drained != "" {
			if err := uncordon(ctx, clientset(t, cfg), drained); err != nil {
				t.Errorf("uncordoning %s: %v", drained, err)
			}
		}
		c := opsClient(t, cfg)
		_ = c.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "e2e-ha"}})
		for i := range haTargets {
			_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e2e-ha-t%d", i)}})
		}
		return ctx
	})
	testenv.Test(t, f.Feature())
}
