package main

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

// The busy scenario (issue 38): the manager in a CPU cgroup whose weight is the one the kubelet
// gives its CPU request, beside a CPU burner in a sibling cgroup, against a floor client that
// gets the same weight in a cgroup of its own.

type busyOptions struct {
	// requests are the CPU requests (milliCPU) measured, in turn.
	requests []int64
	// modes are quiet and/or contended.
	modes []string
	// burnerCPU is the request whose weight the burner cgroup gets; burners the spinning
	// processes in it.
	burnerCPU string
	burners   int
	// namespaces is the fan-out's size; schedules the every-minute ScheduledJobs.
	namespaces, schedules int
	// reps are the fan-outs per cell, each paired with a floor; slots the slots per cell.
	reps, slots int
	// floorCPU is the request whose weight the floor client's cgroup gets, or "same": the
	// manager's request of the row.
	floorCPU string
	// cpuLimit, when set, is a CFS quota on the manager's cgroup for the whole scenario.
	cpuLimit string
	// slotRequests are the requests at which slots are measured (nil: every request).
	slotRequests []int64
	// jobFloors are the Job floors per identity before a cell's slots; jobFloorWorkers their
	// writers.
	jobFloors, jobFloorWorkers int
	// together runs fan-outs back to back while a cell's slots are measured (issue 46: the
	// ScheduledJobs and the fan-out at once, for minutes), and sorts every slot's Jobs two minutes
	// after the last slot into on time, late and missing.
	together bool
	// fanOuts, with together, is how many fan-outs run, the first from 3 s before the first
	// measured slot (0: back to back from the ScheduledJobs' creation until the slots are sorted).
	fanOuts int
}

// busyCell is one (request, mode) of the scenario.
type busyCell struct {
	milli  int64
	weight uint64
	mode   string
	// floor and ours are the fan-out times, pair by pair; oursSeen how many copies the manager
	// had made when a fan-out ran out of time (n when it did not).
	floor, ours []time.Duration
	incomplete  int
	slots       []tally
	// slotRuns are the slots with what the metrics said over each; floors the Job floors.
	slotRuns []slotRun
	floors   []jobFloorRun
	// load are /proc/loadavg's 1-minute figures read at each measurement.
	load []float64
	// gomaxprocs is the manager's go_sched_gomaxprocs_threads during the cell (-1: not read).
	gomaxprocs int
	// cpu is the machine's CPU split over the cell's last fan-out of the manager.
	cpu string
	// restarts counts the manager's exits during the cell (each restarted, as the kubelet would).
	restarts int
	// during are the fan-outs run while the slots were measured (-busy-together); outcomes the
	// slots' Jobs sorted after the last slot (-busy-together).
	during   []fanOutRun
	outcomes slotOutcomes
}

// supervisor restarts the manager, as the kubelet restarts a container, when it exits (a
// starved manager that cannot renew its Lease within the renew deadline exits: "leader election
// lost"), after the kubelet's first back-off (10 s; the kubelet doubles it for every further
// restart of the same container, which this does not), in a new cgroup with the current request.
type supervisor struct {
	e        *env
	mu       sync.Mutex
	milli    int64
	restarts int
}

const restartDelay = 10 * time.Second

func (s *supervisor) run(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		if m := s.e.manager; m != nil {
			if _, _, err := procMemory(m.Cmd.Process.Pid); err == nil {
				s.mu.Unlock()
				continue
			}
		}
		s.restarts++
		logf("busy: the manager exited (restart %d; its log: %s); starting it again in %s", s.restarts, lastLine(filepath.Join(s.e.dir, "manager.log")), restartDelay)
		s.e.stopManager()
		select {
		case <-ctx.Done():
			s.mu.Unlock()
			return
		case <-time.After(restartDelay):
		}
		if err := s.e.startManager(ctx); err != nil {
			logf("busy: restarting the manager: %v", err)
		} else if err := s.e.manager.CPU.SetRequest(s.milli); err != nil {
			logf("busy: %v", err)
		}
		s.mu.Unlock()
	}
}

// setRequest sets the manager's request now and for any restart.
func (s *supervisor) setRequest(milli int64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.milli = milli
	if s.e.manager == nil || s.e.manager.CPU == nil {
		return 0, fmt.Errorf("the manager is not running")
	}
	if err := s.e.manager.CPU.SetRequest(milli); err != nil {
		return 0, err
	}
	return s.e.manager.CPU.Weight()
}

func (s *supervisor) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// lastLine is the last line of a file, cut to 200 bytes.
func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	l := lines[len(lines)-1]
	if len(l) > 200 {
		l = l[:200]
	}
	return l
}

type busyResult struct {
	// floorMilli is the floor client's fixed request; 0 when it had the manager's.
	floorMilli    int64
	cells         []busyCell
	burnerMilli   int64
	burnerWeight  uint64
	cgroupVersion int
	cpuLimit      string
	started       time.Time
}

const (
	busyNS          = "busy-scheduling"
	busySync        = "busy"
	busySource      = "busy-source"
	busyTargetLabel = "bench.platform-operators.io/busy-tenant"
	busyFloorLabel  = "bench.platform-operators.io/busy-floor"
	busyFloorName   = "busy-floor"
	// floorWriterCommand is the first argument that makes the bench binary the busy floor's
	// client (floorWriter).
	floorWriterCommand = "floor-writer"
	busyFanOutTimeout  = 2 * time.Minute
)

func busyNSName(i int) string { return fmt.Sprintf("busy-%04d", i) }

// milliList parses a comma-separated list of CPU quantities ("10m,0.1,1") into milliCPU.
func milliList(name, list string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(list, ",") {
		q, err := resource.ParseQuantity(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", name, f, err)
		}
		if q.MilliValue() <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive CPU quantity", name, f)
		}
		out = append(out, q.MilliValue())
	}
	return out, nil
}

func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// burner is the contending load: processes spinning in a cgroup of their own.
type burner struct {
	cg    *testbed.CPUCgroup
	procs []*exec.Cmd
}

func startBurner(node *testbed.CPUCgroup, milli int64, n int) (*burner, error) {
	cg, err := node.NewChild("po-burner", milli)
	if err != nil {
		return nil, err
	}
	b := &burner{cg: cg}
	for range n {
		cmd := testbed.JoinCommand([]string{cg.Dir}, "/bin/sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			b.stop()
			return nil, fmt.Errorf("starting a CPU burner: %w", err)
		}
		b.procs = append(b.procs, cmd)
	}
	return b, nil
}

// stop kills the burner's processes (by pid, each started here) and removes its cgroup; again,
// it does nothing.
func (b *burner) stop() {
	if b == nil || b.cg == nil {
		return
	}
	for _, p := range b.procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
	b.procs = nil
	if err := b.cg.Remove(10 * time.Second); err != nil {
		logf("busy: %v", err)
	}
	b.cg = nil
}

func runBusy(ctx context.Context, e *env, o busyOptions) (*busyResult, error) {
	if e.manager == nil || e.manager.CPU == nil || e.node == nil {
		return nil, fmt.Errorf("the busy scenario sets the manager's CPU weight: run it with -cpu-share=chart")
	}
	burnerMilli, err := milliList("-busy-burner-cpu", o.burnerCPU)
	if err != nil {
		return nil, err
	}
	res := &busyResult{burnerMilli: burnerMilli[0], cgroupVersion: e.manager.CPU.Version, cpuLimit: o.cpuLimit, started: time.Now()}
	if o.floorCPU != "same" {
		f, err := milliList("-busy-floor-cpu", o.floorCPU)
		if err != nil {
			return nil, err
		}
		res.floorMilli = f[0]
	}
	res.burnerWeight = testbed.CPUShares(res.burnerMilli)
	if res.cgroupVersion == 2 {
		res.burnerWeight = testbed.CPUWeight(res.burnerWeight)
	}
	if o.cpuLimit != "" {
		l, err := milliList("-busy-cpu-limit", o.cpuLimit)
		if err != nil {
			return nil, err
		}
		if err := e.manager.CPU.SetLimit(l[0]); err != nil {
			return nil, err
		}
		defer func() { _ = e.manager.CPU.SetLimit(0) }()
	}
	cs := e.cs
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	logf("busy: creating %d target namespaces", o.namespaces)
	if err := ensureNamespace(ctx, cs, sourceNS, nil); err != nil {
		return nil, err
	}
	if err := parallel(ctx, o.namespaces, 64, func(ctx context.Context, i int) error {
		return ensureNamespace(ctx, cs, busyNSName(i), map[string]string{busyTargetLabel: "true"})
	}); err != nil {
		return nil, err
	}
	if err := settle(ctx, cs, o.namespaces); err != nil {
		return nil, err
	}
	if err := createSecretSync(ctx, dyn, busySync, busySource, busyTargetLabel); err != nil {
		return nil, err
	}
	copies, err := newObserver(ctx, cs, keys.LabelSecretSync+"="+busySync)
	if err != nil {
		return nil, err
	}
	defer copies.close()
	floorObs, err := newObserver(ctx, cs, busyFloorLabel+"="+busyFloorName)
	if err != nil {
		return nil, err
	}
	defer floorObs.close()
	floorCG, err := e.node.NewChild("po-floor", cmp.Or(res.floorMilli, o.requests[0]))
	if err != nil {
		return nil, err
	}
	defer func() { _ = floorCG.Remove(10 * time.Second) }()

	// The ScheduledJobs exist only while a cell's slots are measured (busySlots): no slot falls
	// on a fan-out or a floor.
	var jobs *jobObserver
	if o.schedules > 0 && o.slots > 0 {
		if err := ensureNamespace(ctx, cs, busyNS, nil); err != nil {
			return nil, err
		}
		if jobs, err = newJobObserver(ctx, cs); err != nil {
			return nil, err
		}
		defer jobs.close()
	}
	sup := &supervisor{e: e, milli: e.manager.CPU.MilliCPU}
	supCtx, stopSup := context.WithCancel(ctx)
	defer stopSup()
	go sup.run(supCtx)
	var prof *profiler
	if e.profileDir != "" {
		prof = &profiler{e: e, dir: e.profileDir}
	}
	rep := 0
	for _, milli := range o.requests {
		for _, mode := range o.modes {
			cell := busyCell{milli: milli, mode: mode, gomaxprocs: -1}
			restarts0 := sup.count()
			if cell.weight, err = sup.setRequest(milli); err != nil {
				return nil, err
			}
			if err := floorCG.SetRequest(cmp.Or(res.floorMilli, milli)); err != nil {
				return nil, err
			}
			var b *burner
			if mode == "contended" {
				if b, err = startBurner(e.node, res.burnerMilli, o.burners); err != nil {
					return nil, err
				}
			}
			err := func() error {
				defer b.stop()
				time.Sleep(3 * time.Second) // the weights and the burner in effect
				sup.mu.Lock()
				cell.gomaxprocs = managerGOMAXPROCS(ctx, e)
				sup.mu.Unlock()
				logf("busy: cell %dm (weight %d) %s, manager GOMAXPROCS %d, load %.2f", milli, cell.weight, mode, cell.gomaxprocs, loadAvg())
				for i := range o.reps {
					rep++
					version := fmt.Sprintf("r%d", rep)
					cell.load = append(cell.load, loadAvg())
					// With -profile-dir, the first pair of each cell is profiled (kube-apiserver and
					// the manager), over the floor's window and the manager's.
					profile := func(string, time.Duration) func() { return func() {} }
					if prof != nil && i == 0 {
						profile = func(who string, expected time.Duration) func() {
							return prof.start(ctx, o.namespaces, fmt.Sprintf("busy-%dm-%s-%s", milli, mode, who), expected)
						}
					}
					wait := profile("floor", time.Duration(o.namespaces)*3*time.Millisecond)
					f, err := busyFloor(ctx, e, floorCG, floorObs, o.namespaces, version)
					wait()
					if err != nil {
						return err
					}
					c0 := sampleCPU()
					wait = profile("ours", f*3/2)
					d, seen, err := busyFanOut(ctx, e, dyn, copies, o.namespaces, version)
					wait()
					if err != nil {
						return err
					}
					cell.cpu = cpuSummary(c0, sampleCPU(), runtime.NumCPU())
					cell.floor, cell.ours = append(cell.floor, f), append(cell.ours, d)
					if seen < o.namespaces {
						cell.incomplete++
					}
					logf("busy: %dm %s fan-out %d: floor %s, ours %s (%.2f×, %d/%d copies), load %.2f; %s", milli, mode, rep, secs(f), secs(d), float64(d)/float64(f), seen, o.namespaces, loadAvg(), cell.cpu)
				}
				if jobs == nil || (o.slotRequests != nil && !slices.Contains(o.slotRequests, milli)) {
					return nil
				}
				label := fmt.Sprintf("%dm %s", milli, mode)
				for i := range o.jobFloors {
					for _, id := range jobFloorIdentities {
						f, err := busyJobFloor(ctx, e, floorCG, jobs, o.schedules, o.jobFloorWorkers, fmt.Sprintf("jf-%d-%s-%d-%s", milli, mode, i, id), id)
						if err != nil {
							return err
						}
						cell.floors = append(cell.floors, f)
						cell.load = append(cell.load, f.load)
						logf("busy: %s Job floor %d %s", label, i+1, f)
					}
				}
				stopDuring := func() []fanOutRun { return nil }
				start := make(chan struct{})
				var startOnce sync.Once
				firstSlot := func() { startOnce.Do(func() { close(start) }) }
				if o.fanOuts == 0 {
					firstSlot()
				}
				if o.together {
					stopDuring = fanOutsDuring(ctx, e, dyn, copies, o.namespaces, o.fanOuts, start, label, fmt.Sprintf("t%d%s", milli, mode))
				}
				// Once the slots are measured the burner stops too: the clean-up (a DeleteCollection of
				// the ScheduledJobs and their Jobs) timed out over and over on the starved API server.
				runs, outcomes, err := busySlots(ctx, e, dyn, jobs, o, label, firstSlot, func() { firstSlot(); cell.during = stopDuring(); b.stop() })
				cell.outcomes = outcomes
				for _, r := range runs {
					cell.slotRuns = append(cell.slotRuns, r)
					cell.slots = append(cell.slots, r.t)
					cell.load = append(cell.load, r.load)
				}
				if err != nil {
					return err
				}
				return nil
			}()
			if err != nil {
				return nil, err
			}
			cell.restarts = sup.count() - restarts0
			res.cells = append(res.cells, cell)
		}
	}
	return res, nil
}

// managerGOMAXPROCS reads go_sched_gomaxprocs_threads from the manager's metrics; -1 if absent.
func managerGOMAXPROCS(ctx context.Context, e *env) int {
	body, err := testbed.HTTPGet(ctx, "http://"+e.manager.MetricsAddr+"/metrics")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "go_sched_gomaxprocs_threads" {
			v, _ := strconv.ParseFloat(f[1], 64)
			return int(v)
		}
	}
	return -1
}

// busyFanOut creates the source with version, times it until every copy is visible through a
// watch (or busyFanOutTimeout), then deletes the source and waits until the copies are gone.
// It returns the time and how many copies were seen.
func busyFanOut(ctx context.Context, e *env, dyn dynamic.Interface, copies *observer, n int, version string) (time.Duration, int, error) {
	cs := e.cs
	t0, err := writeSource(ctx, cs, busySource, version, payload(version), true)
	if err != nil {
		return 0, 0, err
	}
	last, werr := copies.waitAll(ctx, version, n, busyFanOutTimeout)
	d := last.Sub(t0)
	seen := n
	if werr != nil {
		d = busyFanOutTimeout
		seen = len(copies.copyLatencies(version, t0))
	}
	if err := cs.CoreV1().Secrets(sourceNS).Delete(ctx, busySource, metav1.DeleteOptions{}); err != nil {
		return 0, 0, err
	}
	// The copies go with the source (deletionPolicy Delete), so the next fan-out creates them
	// again. A starved manager may not manage that in time: the next fan-out then updates the
	// copies left, which the row's count of incomplete fan-outs shows.
	err = wait.PollUntilContextTimeout(ctx, time.Second, busyFanOutTimeout, true, func(ctx context.Context) (bool, error) {
		left, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: keys.LabelSecretSync + "=" + busySync, Limit: 1})
		return err == nil && len(left.Items) == 0, err
	})
	switch {
	case wait.Interrupted(err) && ctx.Err() == nil:
		logf("busy: copies of %s still there %s after the source was deleted", busySync, busyFanOutTimeout)
		seen = min(seen, n-1)
	case err != nil:
		return 0, 0, err
	}
	time.Sleep(2 * time.Second)
	return d, seen, nil
}

// fanOutRun is one fan-out of -busy-together: its time, and the copies seen of n.
type fanOutRun struct {
	d       time.Duration
	seen, n int
}

// fanOutsDuring runs fan-outs one after the other, from when start closes, until count have run
// (0: no limit) or the returned stop is called, which lets the fan-out in flight finish (each is
// bounded by busyFanOutTimeout, and leaves no source or copy behind) and returns them all. The
// sources' versions are prefix-1, -2, ...
func fanOutsDuring(ctx context.Context, e *env, dyn dynamic.Interface, copies *observer, n, count int, start <-chan struct{}, label, prefix string) (stop func() []fanOutRun) {
	quit := make(chan struct{})
	done := make(chan []fanOutRun)
	go func() {
		var runs []fanOutRun
		select {
		case <-start:
		case <-quit:
			done <- runs
			return
		}
		for i := 1; ; i++ {
			if count > 0 && len(runs) == count {
				<-quit
				done <- runs
				return
			}
			select {
			case <-quit:
				done <- runs
				return
			default:
			}
			d, seen, err := busyFanOut(ctx, e, dyn, copies, n, fmt.Sprintf("%s-%d", prefix, i))
			if err != nil {
				logf("busy: %s fan-out during the slots: %v", label, err)
				<-quit
				done <- runs
				return
			}
			runs = append(runs, fanOutRun{d: d, seen: seen, n: n})
			logf("busy: %s fan-out %d during the slots: %s (%d/%d copies), load %.2f", label, len(runs), secs(d), seen, n, loadAvg())
		}
	}()
	return func() []fanOutRun {
		close(quit)
		return <-done
	}
}

// busyFloor has the floor client, a process of its own in the floor's cgroup, create one Secret
// per target namespace, times it from the go signal until the last is visible through the
// bench's watch, and deletes them with the bench's client (untimed).
func busyFloor(ctx context.Context, e *env, cg *testbed.CPUCgroup, obs *observer, n int, version string) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := testbed.JoinCommand([]string{cg.Dir}, self, floorWriterCommand,
		"-kubeconfig", filepath.Join(e.dir, "kubeconfig"), "-namespaces", strconv.Itoa(n), "-version", version, "-workers", "32")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		return 0, floorWriterFailed("did not get ready", lines)
	}
	t0 := time.Now()
	if _, err := fmt.Fprintln(stdin, "go"); err != nil {
		return 0, err
	}
	last, err := obs.waitAll(ctx, version, n, busyFanOutTimeout)
	if err != nil {
		return 0, err
	}
	if !lines.Scan() || lines.Text() != "done" {
		return 0, floorWriterFailed("did not finish", lines)
	}
	if err := parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		return e.cs.CoreV1().Secrets(busyNSName(i)).Delete(ctx, busyFloorName, metav1.DeleteOptions{})
	}); err != nil {
		return 0, err
	}
	time.Sleep(2 * time.Second)
	return last.Sub(t0), nil
}

// floorWriterFailed says why the floor writer's output stopped short: a read error, or what it
// said instead (its own error goes to the bench's stderr).
func floorWriterFailed(what string, lines *bufio.Scanner) error {
	if err := lines.Err(); err != nil {
		return fmt.Errorf("the floor writer %s: %w", what, err)
	}
	return fmt.Errorf("the floor writer %s (it said %q)", what, lines.Text())
}

// floorWriter is the busy floor's client: a bare client-go client (protobuf, no rate limit, as
// the other floors) that connects, says "ready", waits for a line on stdin, creates one Secret
// per target namespace with -workers writers, and says "done".
func floorWriter(args []string) error {
	fs := flag.NewFlagSet(floorWriterCommand, flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "")
	n := fs.Int("namespaces", 0, "")
	version := fs.String("version", "", "")
	workers := fs.Int("workers", 32, "")
	jobsIn := fs.String("jobs-in", "", "")
	createdBy := fs.Bool("created-by", false, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = kruntime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	// Connected before the clock starts, as a running pod's client is.
	if _, err := cs.CoreV1().Namespaces().Get(ctx, busyNSName(0), metav1.GetOptions{}); err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	if *jobsIn != "" {
		return floorJobs(ctx, cs, *jobsIn, *version, *n, *workers, *createdBy)
	}
	err = parallel(ctx, *n, *workers, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Secrets(busyNSName(i)).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: busyNSName(i), Name: busyFloorName, Labels: map[string]string{busyFloorLabel: busyFloorName}},
			Type:       corev1.SecretTypeOpaque, Data: payload(*version),
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	fmt.Println("done")
	return nil
}

// floorJobs creates n Jobs (the ScheduledJobs' template) named after name in namespace with
// workers writers, from the moment it is called, and says "done" and then "creates" with the
// times (nanoseconds from that moment) of the last create's return and of its p50 and p99.
// With createdBy the Jobs carry our created-by label, as the chart's manager-jobs policy asks of
// the manager's (and its ownership-keys policy forbids to anyone else).
func floorJobs(ctx context.Context, cs kubernetes.Interface, namespace, name string, n, workers int, createdBy bool) error {
	tmpl := jobTemplate()
	labels := map[string]string{busyFloorLabel: name}
	if createdBy {
		labels[keys.LabelCreatedBy] = jobFloorCreatedBy
	}
	t0 := time.Now()
	returned := make([]time.Duration, n)
	err := parallel(ctx, n, workers, func(ctx context.Context, i int) error {
		_, err := cs.BatchV1().Jobs(namespace).Create(ctx, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: floorJobName(name, i), Labels: labels},
			Spec:       tmpl.Spec,
		}, metav1.CreateOptions{})
		returned[i] = time.Since(t0)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Println("done")
	fmt.Printf("creates %d %d %d\n", int64(percentile(returned, 1)), int64(percentile(returned, 0.5)), int64(percentile(returned, 0.99)))
	return nil
}

// floorTreatment says what the floor client's cgroup weight was.
func floorTreatment(milli int64) string {
	if milli == 0 {
		return "with the manager's weight (a pod with the same request): the ratio is then the manager's cost per CPU share against a bare client's, whatever the request"
	}
	return fmt.Sprintf("with the weight of a %dm request in every row (`-busy-floor-cpu`): a client that got the share it needed, so the ratio shows what the manager's request costs it", milli)
}

// ratios are ours/floor, pair by pair.
func (c busyCell) ratios() []float64 {
	var out []float64
	for i := range c.ours {
		if i < len(c.floor) && c.floor[i] > 0 {
			out = append(out, float64(c.ours[i])/float64(c.floor[i]))
		}
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

func writeBusyReport(path, imgDir string, r *busyResult, o busyOptions, cmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## On a busy node: the manager with a pod's CPU share\n\n")
	weightFile := map[int]string{1: "cpu.shares", 2: "cpu.weight"}[r.cgroupVersion]
	fmt.Fprintf(&b, "Measured %s on %d cores (%s/%s), kwok cluster, manager as the chart's ServiceAccount with the chart's values; cgroup v%d. Command: `%s`.\n\n",
		r.started.UTC().Format("2006-01-02 15:04"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, r.cgroupVersion, cmd)
	fmt.Fprintf(&b, "The manager runs in a CPU cgroup whose %s is what the kubelet gives a pod with the row's CPU request (`testbed.CPUShares`, `CPUWeight`), set in place between rows; "+
		"the floor client (a bare client-go client, 32 writers, no rate limit) runs as a process of its own in a sibling cgroup, as a pod would, %s. "+
		"All of them sit in a node cgroup (the kubelet's kubepods, with the weight of the machine's %d CPUs) beside the kwok cluster's kube-apiserver, kube-controller-manager, kube-scheduler and etcd, "+
		"each moved into a cgroup with the weight of its kubeadm static pod's request (250m, 200m, 100m, 100m), as on a one-node kind cluster; kwok-controller (the kubelet's stand-in) and the bench's watches stay outside. "+
		"Contended: %d processes spin in another sibling cgroup with the weight of a %dm request (%s %d), a pod that asked for one CPU and uses every core it can get. "+
		"Outside the node cgroup, whatever else runs on this shared machine competes with the node as a whole. ",
		weightFile, floorTreatment(r.floorMilli), runtime.NumCPU(), o.burners, r.burnerMilli, weightFile, r.burnerWeight)
	if r.cpuLimit != "" {
		fmt.Fprintf(&b, "The manager's cgroup also had a CPU limit of %s (a CFS quota). ", r.cpuLimit)
	}
	fmt.Fprintf(&b, "Each fan-out is a new source Secret to %d namespaces, until the last copy is visible through a watch, paired with a floor run just before it (the ratio is per pair; median and range over %d pairs). "+
		"When the manager exits (a manager starved past its Lease's renew deadline exits with \"leader election lost\"), the bench starts it again after 10 s, the kubelet's first back-off, and counts it (manager restarts); such a row misses its target. "+
		"Slots: %d every-minute ScheduledJobs (suspended Job template), skew from the slot until the Job is visible, %d slots per row, the Jobs deleted after each. Load is the 1-minute load average at each measurement (other work shares this machine).\n\n",
		o.namespaces, o.reps, o.schedules, o.slots)
	fmt.Fprintf(&b, "| CPU request | %s | node | fan-out floor / ours (median) | ratio median (range) | slot skew p99 per slot | slots ran | GOMAXPROCS | manager restarts | load | targets (contended: ratio ≤ 1.25×, every slot's Job within its minute, slot p99 within 1 s of the Job floor's, or ≤ 2 s without a floor) |\n|---|---|---|---|---|---|---|---|---|---|---|\n", weightFile)
	for _, c := range r.cells {
		rs := c.ratios()
		ratio := "–"
		if len(rs) > 0 {
			ratio = fmt.Sprintf("%.2f× (%.2f–%.2f)", median(rs), slices.Min(rs), slices.Max(rs))
		}
		if c.incomplete > 0 {
			ratio += fmt.Sprintf(", %d fan-out(s) not complete in %s", c.incomplete, busyFanOutTimeout)
		}
		var p99s []string
		ran, expected := 0, 0
		worst := time.Duration(0)
		for _, s := range c.slots {
			p := percentile(s.skews, 0.99)
			p99s = append(p99s, ms(p))
			ran += s.ran
			expected += s.expected
			worst = max(worst, p)
		}
		loads := "–"
		if len(c.load) > 0 {
			loads = fmt.Sprintf("%.1f–%.1f", slices.Min(c.load), slices.Max(c.load))
		}
		target := ""
		if c.mode == "contended" {
			ok := len(rs) > 0 && median(rs) <= 1.25 && c.incomplete == 0 && c.restarts == 0
			if len(c.slots) > 0 {
				ok = ok && ran == expected && slotsNearFloor(c, worst)
			}
			target = verdict(ok)
		}
		fmt.Fprintf(&b, "| %dm | %d | %s | %.2f s / %.2f s | %s | %s | %d / %d | %d | %d | %s | %s |\n", c.milli, c.weight, c.mode,
			median(seconds(c.floor)), median(seconds(c.ours)), ratio, strings.Join(p99s, ", "), ran, expected, c.gomaxprocs, c.restarts, loads, target)
	}
	fmt.Fprintf(&b, "\nThe CPU split over each row's last fan-out of the manager (cores used in that window, by process):\n\n")
	for _, c := range r.cells {
		fmt.Fprintf(&b, "- %dm %s: %s\n", c.milli, c.mode, c.cpu)
	}
	writeTogether(&b, r, o)
	writeSlotFloors(&b, r, o)
	return replaceSection(path, "busy", b.String())
}

// writeTogether adds what -busy-together measured: the fan-outs run during the slots, and every
// slot's Jobs sorted two minutes after the last slot (issue 46's target: no restart, no slot
// missing, late slots late and not lost, every fan-out complete).
func writeTogether(b *strings.Builder, r *busyResult, o busyOptions) {
	if !o.together {
		return
	}
	fmt.Fprintf(b, "\n### Slots and fan-outs at once\n\n")
	when := fmt.Sprintf("From the creation of each row's ScheduledJobs until its %d slots were measured and sorted (below), fan-outs to %d namespaces ran one after the other", o.slots, o.namespaces)
	if o.fanOuts > 0 {
		when = fmt.Sprintf("From 3 s before the first of each row's %d measured slots, %d fan-out(s) to %d namespaces ran one after the other", o.slots, o.fanOuts, o.namespaces)
	}
	fmt.Fprintf(b, "%s (each until every copy was visible, or %s; then the source deleted and its copies gone; the one in flight at the end is let finish). "+
		"Two minutes after the last slot, each slot's %d ScheduledJobs are sorted by when their Job appeared: within the slot's minute (on time), after it (late), or not at all (missing); in total and per slot, in slot order.\n\n",
		when, busyFanOutTimeout, o.schedules)
	fmt.Fprintf(b, "| CPU request | node | fan-outs during the slots (complete / run) | their times | slots on time / late / missing | per slot | manager restarts | target (0 restarts, 0 missing, fan-outs complete) |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.cells {
		if len(c.slots) == 0 {
			continue
		}
		complete := 0
		var times []string
		for _, f := range c.during {
			if f.seen == f.n {
				complete++
			}
			times = append(times, secs(f.d))
		}
		var per []string
		for _, s := range c.slotRuns {
			per = append(per, fmt.Sprintf("%d / %d / %d", s.outcome.onTime, s.outcome.late, s.outcome.missing))
		}
		ok := c.restarts == 0 && c.outcomes.missing == 0 && complete == len(c.during) && len(c.during) > 0
		fmt.Fprintf(b, "| %dm | %s | %d / %d | %s | %d / %d / %d | %s | %d | %s |\n", c.milli, c.mode, complete, len(c.during), cmp.Or(strings.Join(times, ", "), "–"),
			c.outcomes.onTime, c.outcomes.late, c.outcomes.missing, strings.Join(per, ", "), c.restarts, verdict(ok))
	}
}
