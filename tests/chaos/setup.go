package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
}

// setup brings up the test bed and the load; every step reuses what an earlier run (-keep) left.
func (h *harness) setup(ctx context.Context) error {
	gw, err := testbed.DockerBridgeGateway(ctx)
	if err != nil {
		return err
	}
	pw, err := h.password()
	if err != nil {
		return err
	}
	h.reg = testbed.Registry{Dir: filepath.Join(h.dir, "registry"), Host: gw, Port: registryPort, User: robot, Password: pw}
	step("registry %s", h.reg.Addr())
	if err := h.reg.Start(ctx); err != nil {
		return err
	}
	h.kubecfg = filepath.Join(h.dir, "kubeconfig")
	h.kind = testbed.Kind{Name: clusterName, Root: h.root, Kubeconfig: h.kubecfg, Registry: h.reg.Addr(), Out: os.Stderr}
	// Images are built and pushed while the cluster comes up.
	type pushed struct {
		p   testbed.PushedImages
		err error
	}
	push := make(chan pushed, 1)
	go func() {
		log, err := os.Create(filepath.Join(h.dir, "image-push.log"))
		if err != nil {
			push <- pushed{err: err}
			return
		}
		defer log.Close()
		p, err := testbed.PushImages(ctx, h.root, h.reg, "platform", imageTag, log)
		if err == nil {
			// The upgrade scenario rolls the manager to the same image under a second tag.
			_, err = testbed.PushImages(ctx, h.root, h.reg, "platform", upgradeTag, log)
		}
		push <- pushed{p, err}
	}()
	step("kind cluster %q (one node; node image from scripts/kind-node.sh)", clusterName)
	if _, err := h.kind.Up(ctx); err != nil {
		return err
	}
	if err := h.restConfigClients(); err != nil {
		return err
	}
	step("building and pushing the manager image (tags %s, %s) and the job image", imageTag, upgradeTag)
	pr := <-push
	if pr.err != nil {
		return pr.err
	}
	h.images = pr.p
	h.vals = map[string]any{
		"image": map[string]any{"registry": h.images.Registry, "repository": h.images.ManagerRepository, "tag": imageTag,
			"digest": "", "pullPolicy": "IfNotPresent"},
		"jobImage":            map[string]any{"registry": h.images.Registry, "repository": h.images.JobRepository, "tag": h.images.JobTag},
		"replicaCount":        2,
		"leaderElection":      map[string]any{"enabled": true},
		"podDisruptionBudget": map[string]any{"enabled": true},
		// The manager's pods pull with managerPullSecret: since issue 28 the chart never gives them
		// pullSecret (the tenants' credential), and with that the pods never started here. The
		// Jobs make no pods (cheapJob), so nothing else pulls.
		"managerPullSecret": map[string]any{"create": true, "registry": h.reg.Addr(), "username": h.reg.User, "password": h.reg.Password},
	}
	if err := h.rec.start(ctx, h.cs, releaseNamespace); err != nil {
		return err
	}
	step("helm upgrade -i %s -n %s (2 replicas, leader election, image %s/manager:%s)", releaseName, releaseNamespace, h.images.Registry, imageTag)
	if _, err := testbed.UpgradeInstall(h.release(h.vals), nil); err != nil {
		return err
	}
	if _, _, err := h.leader(ctx); err != nil {
		return err
	}
	return h.load(ctx)
}

func (h *harness) release(vals map[string]any) testbed.Release {
	return testbed.Release{Name: releaseName, Namespace: releaseNamespace, ChartDir: filepath.Join(h.root, "charts", "platform-operators"),
		Kubeconfig: h.kubecfg, Values: vals, Timeout: 5 * time.Minute}
}

// password is the registry account's, kept so a reused cluster's pull secret still matches.
func (h *harness) password() (string, error) {
	f := filepath.Join(h.dir, "registry-password")
	b, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		r := make([]byte, 12)
		_, _ = rand.Read(r)
		b = []byte(hex.EncodeToString(r))
		err = os.WriteFile(f, b, 0o600)
	}
	return string(b), err
}

func (h *harness) commit() string {
	out, err := exec.Command("git", "-C", h.root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// parallel runs f(0..n-1) on 32 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func fanoutNS(i int) string { return fmt.Sprintf("chaos-%04d", i) }

// load creates the scenarios' shared load once: 1000 labelled namespaces (decoys first in every
// 100th), the source Secret and its SecretSync, and the 300 ScheduledJobs.
func (h *harness) load(ctx context.Context) error {
	start := time.Now()
	for _, ns := range []string{sourceNamespace, sjNamespace, atNamespace} {
		if err := ignoreExists(h.cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			return err
		}
	}
	decoyRV := map[string]string{}
	var mu sync.Mutex
	h.copyNS = nil
	for i := range fanoutNamespaces {
		if i%decoyEvery != 0 {
			h.copyNS = append(h.copyNS, fanoutNS(i))
		}
	}
	step("creating %d namespaces (%d with a decoy Secret %q we do not own)", fanoutNamespaces, fanoutNamespaces/decoyEvery, fanoutSecret)
	err := parallel(fanoutNamespaces, func(i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fanoutNS(i), Labels: map[string]string{fanoutLabel: "true"}}}
		if err := ignoreExists(h.cl.Create(ctx, ns)); err != nil {
			return err
		}
		if i%decoyEvery != 0 {
			return nil
		}
		d := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fanoutSecret, Namespace: fanoutNS(i)}, StringData: map[string]string{"owner": "someone else"}}
		if err := h.cl.Create(ctx, d); apierrors.IsAlreadyExists(err) {
			if err := h.cl.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		mu.Lock()
		decoyRV[d.Namespace+"/"+d.Name] = d.ResourceVersion
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	h.rec.mu.Lock()
	h.rec.decoys = decoyRV
	h.rec.mu.Unlock()
	// The source: its data carries a generation the scenarios bump.
	src := &corev1.Secret{}
	if err := h.cl.Get(ctx, client.ObjectKey{Namespace: sourceNamespace, Name: fanoutSecret}, src); apierrors.IsNotFound(err) {
		src = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fanoutSecret, Namespace: sourceNamespace},
			Data: sourceData(0)}
		if err := h.cl.Create(ctx, src); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	_, _ = fmt.Sscan(string(src.Data["generation"]), &h.gen)
	h.digest = dataDigest(src.Data)
	ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "chaos-fanout"}, Spec: v1alpha1.SecretSyncSpec{
		Source: v1alpha1.SecretSyncSource{Namespace: sourceNamespace, Name: fanoutSecret},
		Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{fanoutLabel: "true"}}},
	}}
	if err := ignoreExists(h.cl.Create(ctx, ss)); err != nil {
		return err
	}
	step("waiting for %d copies", len(h.copyNS))
	if _, ok := h.rec.waitFor(ctx, 5*time.Minute, h.converged(h.digest)); !ok {
		return fmt.Errorf("the initial fan-out did not converge in 5m")
	}
	step("creating %d ScheduledJobs (every minute, history 0, half Forbid, half Allow, startingDeadlineSeconds %d)", scheduledJobs, startingDeadline)
	h.sjKeys = nil
	for i := range scheduledJobs {
		h.sjKeys = append(h.sjKeys, fmt.Sprintf("%s/sj-%03d", sjNamespace, i))
	}
	err = parallel(scheduledJobs, func(i int) error {
		policy := v1alpha1.AllowConcurrent
		if i%2 == 0 {
			policy = v1alpha1.ForbidConcurrent
		}
		sj := &v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sj-%03d", i), Namespace: sjNamespace},
			Spec: v1alpha1.ScheduledJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: policy,
				StartingDeadlineSeconds:    ptr.To[int64](startingDeadline),
				SuccessfulJobsHistoryLimit: ptr.To[int32](0), FailedJobsHistoryLimit: ptr.To[int32](0),
				JobTemplate: batchv1.JobTemplateSpec{Spec: h.cheapJob()}}}
		return ignoreExists(h.cl.Create(ctx, sj))
	})
	if err != nil {
		return err
	}
	step("load ready in %s", time.Since(start).Round(time.Second))
	return nil
}

// cheapJob is a real Job that creates no pod (parallelism 0; and its pod template could not be
// scheduled anyway: a nodeSelector no node has): the Job controller starts it and fails it with
// DeadlineExceeded after 20 s, and history 0 prunes it. 300 Jobs with pods a minute outran
// kube-controller-manager's Job controller here (Jobs started minutes late); without pods they
// cost a few writes each.
func (h *harness) cheapJob() batchv1.JobSpec {
	return batchv1.JobSpec{
		Parallelism:           ptr.To[int32](0),
		ActiveDeadlineSeconds: ptr.To[int64](20),
		BackoffLimit:          ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{"chaos.platform-operators.io/no-such-node": "true"},
			Containers:    []corev1.Container{{Name: "noop", Image: h.images.Job, Command: []string{"true"}}},
		}},
	}
}

func sourceData(gen int) map[string][]byte {
	return map[string][]byte{"generation": []byte(fmt.Sprint(gen)), "token": []byte(strings.Repeat(fmt.Sprintf("%08d", gen), 32))}
}

// bumpSource writes a new generation into the source Secret and returns the copies' new digest.
func (h *harness) bumpSource(ctx context.Context) (string, time.Time, error) {
	h.gen++
	src := &corev1.Secret{}
	if err := h.cl.Get(ctx, client.ObjectKey{Namespace: sourceNamespace, Name: fanoutSecret}, src); err != nil {
		return "", time.Time{}, err
	}
	src.Data = sourceData(h.gen)
	if err := h.cl.Update(ctx, src); err != nil {
		return "", time.Time{}, err
	}
	h.digest = dataDigest(src.Data)
	return h.digest, time.Now(), nil
}

// converged is the condition "every copy holds digest" (called with the recorder locked).
func (h *harness) converged(digest string) func() bool {
	return func() bool {
		for _, ns := range h.copyNS {
			if h.rec.copies[ns] != digest {
				return false
			}
		}
		return true
	}
}

// createAts creates n Ats due at due, each with the cheap Job, and returns their keys.
func (h *harness) createAts(ctx context.Context, due time.Time, n int) ([]string, error) {
	var keys []string
	for range n {
		h.atCount++
		name := fmt.Sprintf("at-%03d", h.atCount)
		tmpl := &batchv1.JobTemplateSpec{Spec: h.cheapJob()}
		at := &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: atNamespace},
			Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(due), JobTemplate: tmpl, StartingDeadlineSeconds: ptr.To[int64](300)}}
		if err := ignoreExists(h.cl.Create(ctx, at)); err != nil {
			return nil, err
		}
		keys = append(keys, atNamespace+"/"+name)
	}
	return keys, nil
}
