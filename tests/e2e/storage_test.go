package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// e2eStorageProvisioner is the chart's StorageClass provisioner in the suite: the EFS CSI driver on
// kwok (no driver runs: claims wait, the parameters are checked), the in-tree host-path
// provisioner kind's controller-manager runs on kind (claims bind; the EFS parameters are then
// covered by the chart's render tests).
var e2eStorageProvisioner = "efs.csi.aws.com"

func efsProvisioner() bool { return e2eStorageProvisioner == "efs.csi.aws.com" }

const (
	e2eStorageClass = "e2e-efs"
	e2eFileSystemID = "fs-0123456789abcdef0"
	storageNS       = "e2e-storage"
)

// suiteRelease is the suite's release as testbed installs it, for checks that run Helm again.
func suiteRelease(cfg *envconf.Config, values map[string]any) testbed.Release {
	return testbed.Release{
		Name: releaseName, Namespace: releaseNamespace, ChartDir: filepath.Join(root, "charts", "platform-operators"),
		Kubeconfig: cfg.KubeconfigFile(), Values: values,
	}
}

func TestStorage(t *testing.T) {
	class := features.New("the chart's EFS StorageClass").
		Assess("the class exists with the EFS provisioner and string parameters", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			sc := &storagev1.StorageClass{}
			if err := cfg.Client().Resources().Get(ctx, e2eStorageClass, "", sc); err != nil {
				t.Fatalf("StorageClass %s: %v", e2eStorageClass, err)
			}
			want := map[string]string{"provisioningMode": "efs-ap", "fileSystemId": e2eFileSystemID, "directoryPerms": "700"}
			if !efsProvisioner() {
				want = nil // the chart renders the EFS parameters only for the EFS provisioner
			}
			if sc.Provisioner != e2eStorageProvisioner || !reflect.DeepEqual(sc.Parameters, want) {
				t.Errorf("provisioner %s, parameters %v; want %s, %v", sc.Provisioner, sc.Parameters, e2eStorageProvisioner, want)
			}
			if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
				t.Errorf("reclaimPolicy %s, volumeBindingMode %s", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
			}
			if sc.Labels["app.kubernetes.io/managed-by"] != "Helm" {
				t.Errorf("labels = %v, want the chart's", sc.Labels)
			}
			return ctx
		}).
		Assess("a ReadWriteMany claim is accepted and waits for the EFS provisioner", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !efsProvisioner() {
				t.Skip("the class uses the test bed's provisioner here; see the next assessment")
			}
			c := ctrlClient(t, cfg)
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: storageNS, Name: "harbor-registry"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
					StorageClassName: new(e2eStorageClass),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
				},
			}
			if err := c.Create(ctx, pvc); err != nil {
				t.Fatalf("creating a ReadWriteMany claim: %v", err)
			}
			// The PV controller hands the claim to the external provisioner named by the class: an
			// annotation on the claim and an ExternalProvisioning event. No driver runs here, so it stays Pending.
			eventually(ctx, t, "the claim names the EFS provisioner", func(ctx context.Context) error {
				got := &corev1.PersistentVolumeClaim{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: storageNS, Name: pvc.Name}, got); err != nil {
					return err
				}
				if p := got.Annotations["volume.kubernetes.io/storage-provisioner"]; p != "efs.csi.aws.com" {
					return fmt.Errorf("annotation volume.kubernetes.io/storage-provisioner = %q", p)
				}
				if got.Status.Phase != corev1.ClaimPending {
					return fmt.Errorf("phase %s, want Pending without a CSI driver", got.Status.Phase)
				}
				return nil
			})
			eventually(ctx, t, "an ExternalProvisioning event", func(ctx context.Context) error {
				evs := &corev1.EventList{}
				if err := cfg.Client().Resources(storageNS).List(ctx, evs); err != nil {
					return err
				}
				for _, e := range evs.Items {
					if e.InvolvedObject.Name == pvc.Name && e.Reason == "ExternalProvisioning" && strings.Contains(e.Message, "efs.csi.aws.com") {
						return nil
					}
				}
				return fmt.Errorf("no ExternalProvisioning event for %s among %d events", pvc.Name, len(evs.Items))
			})
			return ctx
		}).
		Assess("on real nodes a claim on the class binds and a pod writes and reads it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessKind(t)
			c := ctrlClient(t, cfg)
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: storageNS, Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: new(e2eStorageClass),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Mi")}},
				},
			}
			if err := c.Create(ctx, pvc); err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: storageNS, Name: "writer"},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: chartJobImage,
						Command:      []string{"/bin/sh", "-c", "echo kept > /data/f && cat /data/f"},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}},
				},
			}
			if err := c.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "the claim binds and the pod succeeds", func(ctx context.Context) error {
				got := &corev1.PersistentVolumeClaim{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: storageNS, Name: pvc.Name}, got); err != nil {
					return err
				}
				if got.Status.Phase != corev1.ClaimBound {
					return fmt.Errorf("claim %s", got.Status.Phase)
				}
				p := &corev1.Pod{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: storageNS, Name: pod.Name}, p); err != nil {
					return err
				}
				if p.Status.Phase != corev1.PodSucceeded {
					return fmt.Errorf("pod %s", p.Status.Phase)
				}
				return nil
			})
			if log, err := podLogs(ctx, clientset(t, cfg), storageNS, pod.Name, "main"); err != nil || log != "kept\n" {
				t.Errorf("pod log %q (%v), want %q", log, err, "kept\n")
			}
			return ctx
		}).
		Assess("an upgrade with the same values passes the immutability check against the live class", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := testbed.UpgradeServerDryRun(suiteRelease(cfg, suiteValues())); err != nil {
				t.Fatalf("helm upgrade --dry-run=server with unchanged values: %v", err)
			}
			return ctx
		}).
		Assess("an upgrade that changes immutable fields fails early, naming them, and changes nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			values := suiteValues()
			sc := maps.Clone(values["storageClass"].(map[string]any))
			sc["reclaimPolicy"] = "Retain"
			wants := []string{`StorageClass "` + e2eStorageClass + `"`, "reclaimPolicy (Delete -> Retain)", "Nothing was applied"}
			if efsProvisioner() {
				sc["parameters"] = map[string]any{"fileSystemId": "fs-0fedcba9876543210", "directoryPerms": "750"}
				wants = append(wants, "parameters.fileSystemId", "parameters.directoryPerms")
			}
			values["storageClass"] = sc
			before := time.Now()
			_, err := testbed.Upgrade(suiteRelease(cfg, values))
			if err == nil {
				t.Fatal("helm upgrade changing the StorageClass parameters succeeded, want it to fail")
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			got := &storagev1.StorageClass{}
			if err := cfg.Client().Resources().Get(ctx, e2eStorageClass, "", got); err != nil {
				t.Fatal(err)
			}
			if *got.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || (efsProvisioner() && got.Parameters["fileSystemId"] != e2eFileSystemID) {
				t.Errorf("the class changed: reclaimPolicy %s, parameters %v", *got.ReclaimPolicy, got.Parameters)
			}
			// Helm stopped before creating a new revision: the release is still deployed as before.
			secrets := &corev1.SecretList{}
			if err := cfg.Client().Resources(releaseNamespace).List(ctx, secrets); err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets.Items {
				if s.Type == "helm.sh/release.v1" && s.CreationTimestamp.After(before.Add(-time.Second)) {
					t.Errorf("the failed upgrade stored a release revision %s", s.Name)
				}
			}
			return ctx
		})

	testenv.Test(t, withNamespace(class, storageNS).Feature())
}
