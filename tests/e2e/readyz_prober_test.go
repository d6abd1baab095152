package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// readyzProber asks every running manager pod's /readyz every 0.5 s (through the API server's pod
// proxy) for the whole kind suite, and records every answer other than 200 that a pod gave after
// it first answered 200 while it was not being deleted: readiness must mean "this replica can do
// its work", and a running replica that once was ready must stay so (issue: readiness that flaps).
// A probe that gets no answer within its 2 s (the API server's proxy, on a loaded 2-core machine
// running the other suites beside this one) is not an answer: it is counted, and becomes a failure
// only when a replica leaves unansweredLimit probes in a row unanswered, which a hung replica does.
type readyzProber struct {
	mu         sync.Mutex
	everReady  map[string]bool
	probes     int
	answered   int
	seen       map[string]bool
	unanswered int
	inARow     map[string]int
	failures   []string
	stop       context.CancelFunc
	done       chan struct{}
	probeEvery time.Duration
}

func startReadyzProber(cs kubernetes.Interface) *readyzProber {
	ctx, cancel := context.WithCancel(context.Background())
	p := &readyzProber{everReady: map[string]bool{}, seen: map[string]bool{}, inARow: map[string]int{}, stop: cancel, done: make(chan struct{}), probeEvery: 500 * time.Millisecond}
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.probeEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.round(ctx, cs)
			}
		}
	}()
	return p
}

func (p *readyzProber) round(ctx context.Context, cs kubernetes.Interface) {
	pods, err := managerPods(ctx, cs)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, pod := range pods {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		wg.Add(1)
		go func(pod corev1.Pod) {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			body, err := cs.CoreV1().Pods(releaseNamespace).ProxyGet("http", pod.Name, containerPort(pod, "health"), "/readyz", nil).DoRaw(rctx)
			if ctx.Err() != nil {
				return
			}
			p.record(ctx, cs, pod, body, err, rctx.Err() != nil)
		}(pod)
	}
	wg.Wait()
}

// unansweredLimit is how many probes in a row a ready replica may leave unanswered (each waits
// 2 s) before that counts as a failure: about 10 s without an answer.
const unansweredLimit = 4

func (p *readyzProber) record(ctx context.Context, cs kubernetes.Interface, pod corev1.Pod, body []byte, err error, timedOut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probes++
	p.seen[pod.Name] = true
	if err == nil {
		p.answered++
		p.everReady[pod.Name] = true
		p.inARow[pod.Name] = 0
		return
	}
	if !p.everReady[pod.Name] {
		return // still starting
	}
	if timedOut {
		p.unanswered++
		if p.inARow[pod.Name]++; p.inARow[pod.Name] < unansweredLimit {
			return
		}
		err = fmt.Errorf("%d probes in a row unanswered, the last: %w", p.inARow[pod.Name], err)
	} else {
		p.inARow[pod.Name] = 0
	}
	// A pod deleted since the round began (drain, rollout) may stop answering: not a flap.
	if cur, gerr := cs.CoreV1().Pods(releaseNamespace).Get(ctx, pod.Name, metav1.GetOptions{}); gerr != nil || cur.DeletionTimestamp != nil {
		return
	}
	p.failures = append(p.failures, fmt.Sprintf("%s %s: %v %s", time.Now().Format(time.RFC3339Nano), pod.Name, err, strings.TrimSpace(string(body))))
}

// Stop ends the probing and returns the number of probes and the failures seen.
func (p *readyzProber) Stop() (int, []string) {
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.probes, append([]string(nil), p.failures...)
}

// Unanswered is the number of probes that got no answer in time (not failures on their own).
func (p *readyzProber) Unanswered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unanswered
}

// Snapshot returns the probes, those answered 200, the pods probed that never answered 200, and
// the failures so far.
func (p *readyzProber) Snapshot() (probes, answered int, neverReady, failures []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.seen {
		if !p.everReady[name] {
			neverReady = append(neverReady, name)
		}
	}
	return p.probes, p.answered, neverReady, append([]string(nil), p.failures...)
}
