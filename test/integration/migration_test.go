package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/cloneset"
	"github.com/nodekruise/kruise/pkg/controller/storageversion"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

const (
	migrationNS  = "migration-it"
	cloneSetsCRD = "clonesets.apps.kruise.io"
	crrsCRD      = "containerrecreaterequests.apps.kruise.io"
	// released is the CloneSet OpenKruise v1.9.0 left behind; its pods are released-<id>.
	released = "released"
)

// releasedIDs are the instance ids of the released CloneSet's pods.
var releasedIDs = []string{"x7k2p", "m4q9z", "b8w3n"}

// TestMigrationFromReleasedOpenKruise: a cluster moving from OpenKruise v1.9.0 as released has its
// CloneSets and ContainerRecreateRequests stored as v1alpha1, the only version the release serves.
// Objects are written as the release writes them, its CRDs are replaced by kruise's (v1beta1
// stored, CloneSet converted by /convert) and kruise's storage-version migrator runs: then every
// object reads in both versions, a v1alpha1 read gives back what was written, spec and status,
// everything is stored as v1beta1 and storedVersions says so; and kruise's CloneSet controller,
// taking over, neither deletes nor creates a pod, nor moves one to another revision.
func TestMigrationFromReleasedOpenKruise(t *testing.T) {
	t.Parallel()
	c := startClusterWith(t, releasedShape)
	cx := ctx(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: migrationNS}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// What OpenKruise v1.9.0 left behind.
	cs := writeReleasedCloneSet(t, c, kube)
	pods := map[string]types.UID{}
	for _, id := range releasedIDs {
		pod := writeReleasedPod(t, kube, cs, id)
		pods[pod.Name] = pod.UID
	}
	crr := writeReleasedCRR(t, c)
	requireStoredAs(t, c, "clonesets", cs.Name, "v1alpha1")
	requireStoredAs(t, c, "containerrecreaterequests", crr.Name, "v1alpha1")

	// kruise installed: its CRDs over the release's, then /convert for CloneSet, as
	// kruise-controller switches it.
	installKruiseCRD(t, c, crrsCRD)
	installKruiseCRD(t, c, cloneSetsCRD)
	convertThroughWebhook(t, c, cloneSetsCRD)
	waitStorageVersion(t, c)

	// Readable in both versions before the migration too (v1beta1 through /convert).
	requireReadable(t, c, cs, crr)

	objects, err := metadata.NewForConfig(c.config)
	require.NoError(t, err)
	m, err := storageversion.New(storageversion.Config{CRDs: c.apiext.ApiextensionsV1().CustomResourceDefinitions(), Objects: objects})
	require.NoError(t, err)
	_, lctx := ktesting.NewTestContext(t)
	require.NoError(t, m.Pass(lctx))

	for _, name := range []string{cloneSetsCRD, crrsCRD} {
		crd, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(cx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"v1beta1"}, crd.Status.StoredVersions, name)
	}
	requireStoredAs(t, c, "clonesets", cs.Name, "v1beta1")
	requireStoredAs(t, c, "containerrecreaterequests", crr.Name, "v1beta1")
	requireReadable(t, c, cs, crr)

	t.Run("CloneSetController", func(t *testing.T) { testTakeOver(t, c, kube, cs, pods) })
}

// releasedShape makes kruise's CloneSet and CRR CRDs what OpenKruise v1.9.0 as released installs:
// v1alpha1 alone, served and stored, conversion None. The golden test
// (pkg/apis/apps/crd_schema_test.go) holds kruise's v1alpha1 schemas of both to the release's,
// apart from the kruise extensions it lists, which the objects below do not use.
func releasedShape(crd *apiextensionsv1.CustomResourceDefinition) {
	if crd.Name != cloneSetsCRD && crd.Name != crrsCRD {
		return
	}
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1alpha1" {
			v.Served, v.Storage = true, true
			versions = append(versions, v)
		}
	}
	crd.Spec.Versions = versions
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
}

// installKruiseCRD replaces the CRD name with kruise's definition, as `helm upgrade` or
// `kubectl apply` of deploy/base/crds does.
func installKruiseCRD(t *testing.T, c *cluster, name string) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/base/crds/apps.kruise.io_" + name[:len(name)-len(".apps.kruise.io")] + ".yaml")
	require.NoError(t, err)
	want := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(raw, want))
	crds := c.apiext.ApiextensionsV1().CustomResourceDefinitions()
	got, err := crds.Get(ctx(t), name, metav1.GetOptions{})
	require.NoError(t, err)
	got.Spec = want.Spec
	_, err = crds.Update(ctx(t), got, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// waitStorageVersion waits until the API server stores new CloneSets and CRRs as v1beta1 and
// reads the old CloneSet in v1beta1 through /convert. The API server takes CRD changes up
// asynchronously; the migrator must not run before, or it would rewrite in the old version.
func waitStorageVersion(t *testing.T, c *cluster) {
	t.Helper()
	probes := 0
	waitFor(t, "CloneSets and CRRs stored as v1beta1, CloneSets converted by /convert", func(ctx context.Context) (bool, error) {
		probes++
		name := fmt.Sprintf("probe-%d", probes)
		probe := cloneSet(name)
		probe.Namespace, probe.Spec.Replicas = migrationNS, ptr.To[int32](0)
		if _, err := c.kruise.AppsV1alpha1().CloneSets(migrationNS).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			return false, nil
		}
		defer func() { _ = c.kruise.AppsV1alpha1().CloneSets(migrationNS).Delete(ctx, name, metav1.DeleteOptions{}) }()
		crr := &v1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: migrationNS},
			Spec: v1alpha1.ContainerRecreateRequestSpec{PodName: "none", Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "main"}}}}
		if _, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(migrationNS).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
			return false, nil
		}
		defer func() {
			_ = c.kruise.AppsV1alpha1().ContainerRecreateRequests(migrationNS).Delete(ctx, name, metav1.DeleteOptions{})
		}()
		if storedVersion(t, c, "clonesets", name) != "v1beta1" || storedVersion(t, c, "containerrecreaterequests", name) != "v1beta1" {
			return false, nil
		}
		beta, err := c.kruise.AppsV1beta1().CloneSets(migrationNS).Get(ctx, released, metav1.GetOptions{})
		return err == nil && beta.Spec.UpdateStrategy.RollingUpdate != nil &&
			beta.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy == v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, nil
	})
}

// storedVersion reads the object's apiVersion from etcd, where the API server keeps custom
// resources as JSON; "" when it is not there.
func storedVersion(t *testing.T, c *cluster, resource, name string) string {
	t.Helper()
	key := fmt.Sprintf("/registry/apps.kruise.io/%s/%s/%s", resource, migrationNS, name)
	body, err := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	require.NoError(t, err)
	resp, err := http.Post(c.etcdURL+"/v3/kv/range", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var got struct {
		KVs []struct {
			Value []byte `json:"value"` // base64 in the gateway's JSON
		} `json:"kvs"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	if len(got.KVs) == 0 {
		return ""
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
	}
	require.NoError(t, json.Unmarshal(got.KVs[0].Value, &obj), "%s is not JSON", key)
	return obj.APIVersion[len("apps.kruise.io/"):]
}

func requireStoredAs(t *testing.T, c *cluster, resource, name, version string) {
	t.Helper()
	require.Equal(t, version, storedVersion(t, c, resource, name), "%s %s stored as", resource, name)
}

// requireReadable: both objects read in v1beta1, and in v1alpha1 exactly as written (apart from
// resourceVersion and managedFields, which every write changes).
func requireReadable(t *testing.T, c *cluster, cs *v1alpha1.CloneSet, crr *v1alpha1.ContainerRecreateRequest) {
	t.Helper()
	cx := ctx(t)
	alpha, err := c.kruise.AppsV1alpha1().CloneSets(migrationNS).Get(cx, cs.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, serverFree(cs), serverFree(alpha), "the CloneSet reads back in v1alpha1 as OpenKruise wrote it")
	beta, err := c.kruise.AppsV1beta1().CloneSets(migrationNS).Get(cx, cs.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, beta.Annotations, "v1beta1 says all of it in fields: no annotation carries what it could not")
	assert.Equal(t, cs.Labels, beta.Labels)
	a, u := cs.Spec, cs.Spec.UpdateStrategy
	assert.Equal(t, v1beta1.CloneSetSpec{
		Replicas: a.Replicas, Selector: a.Selector, Template: a.Template, VolumeClaimTemplates: a.VolumeClaimTemplates,
		ScaleStrategy: v1beta1.CloneSetScaleStrategy{MaxUnavailable: a.ScaleStrategy.MaxUnavailable, EnablePVCReuse: false},
		UpdateStrategy: v1beta1.CloneSetUpdateStrategy{Type: v1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
				Partition: u.Partition, MaxUnavailable: u.MaxUnavailable, MaxSurge: u.MaxSurge,
				PriorityStrategy: u.PriorityStrategy, ScatterStrategy: u.ScatterStrategy,
				InPlaceUpdateStrategy: &pub.InPlaceUpdateStrategy{GracePeriodSeconds: u.InPlaceUpdateStrategy.GracePeriodSeconds,
					ImagePreDownloadParallelism: ptr.To(intstr.FromInt32(2))}}},
		RevisionHistoryLimit: a.RevisionHistoryLimit, MinReadySeconds: a.MinReadySeconds, Lifecycle: a.Lifecycle,
		ProgressDeadlineSeconds: a.ProgressDeadlineSeconds,
	}, beta.Spec, "the v1beta1 view of the v1alpha1 spec")
	assert.Equal(t, asJSON(t, cs.Status), asJSON(t, beta.Status), "the same status in v1beta1")

	alphaCRR, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(migrationNS).Get(cx, crr.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, serverFree(crr), serverFree(alphaCRR), "the CRR reads back in v1alpha1 as OpenKruise wrote it")
	betaCRR, err := c.kruise.AppsV1beta1().ContainerRecreateRequests(migrationNS).Get(cx, crr.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, crr.Labels, betaCRR.Labels)
	assert.Equal(t, crr.Annotations, betaCRR.Annotations)
	assert.Equal(t, asJSON(t, crr.Spec), asJSON(t, betaCRR.Spec), "the same spec in v1beta1")
	assert.Equal(t, asJSON(t, crr.Status), asJSON(t, betaCRR.Status), "the same status in v1beta1")
}

// asJSON is v as the API's JSON, to compare the two versions' types field by field.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// serverFree is obj without what the API server changes at every write.
func serverFree[T interface {
	runtime.Object
	metav1.Object
}](obj T) T {
	out := obj.DeepCopyObject().(T)
	out.SetResourceVersion("")
	out.SetManagedFields(nil)
	return out
}

// writeReleasedCloneSet writes a CloneSet as OpenKruise v1.9.0 keeps one of three running pods:
// its webhook's defaults filled in, its revision, its claims, and the status its controller
// writes.
func writeReleasedCloneSet(t *testing.T, c *cluster, kube kubernetes.Interface) *v1alpha1.CloneSet {
	t.Helper()
	cx := ctx(t)
	labels := map[string]string{"app": released}
	cs := &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: released, Namespace: migrationNS, Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "2"}},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"example.com/note": "kept"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}},
			ScaleStrategy: v1alpha1.CloneSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromString("50%")), DisablePVCReuse: true},
			UpdateStrategy: v1alpha1.CloneSetUpdateStrategy{
				Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
				Partition:      ptr.To(intstr.FromInt32(1)),
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				MaxSurge:       ptr.To(intstr.FromInt32(0)),
				PriorityStrategy: &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
					{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}}},
				ScatterStrategy:       pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}},
				InPlaceUpdateStrategy: &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 10},
			},
			RevisionHistoryLimit: ptr.To[int32](5),
			MinReadySeconds:      5,
			Lifecycle: &pub.Lifecycle{
				PreDelete:     &pub.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}, LabelsHandler: map[string]string{"example.com/deletable": "false"}},
				InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/updatable": "false"}},
			},
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
	created, err := c.kruise.AppsV1alpha1().CloneSets(migrationNS).Create(cx, cs, metav1.CreateOptions{})
	require.NoError(t, err)

	rev := releasedRevision(t, created)
	_, err = kube.AppsV1().ControllerRevisions(migrationNS).Create(cx, rev, metav1.CreateOptions{})
	require.NoError(t, err)

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	created.Status = v1alpha1.CloneSetStatus{
		ObservedGeneration: created.Generation, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		UpdatedReplicas: 3, UpdatedReadyReplicas: 3, UpdatedAvailableReplicas: 3, ExpectedUpdatedReplicas: 3,
		UpdateRevision: rev.Name, CurrentRevision: rev.Name, CollisionCount: ptr.To[int32](0), LabelSelector: "app=" + released,
		Conditions: []v1alpha1.CloneSetCondition{{Type: v1alpha1.CloneSetConditionTypeProgressing, Status: corev1.ConditionTrue,
			LastUpdateTime: now, LastTransitionTime: now, Reason: string(v1alpha1.CloneSetAvailable), Message: "CloneSet is available"}},
	}
	written, err := c.kruise.AppsV1alpha1().CloneSets(migrationNS).UpdateStatus(cx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, created.Status, written.Status)
	return written
}

// releasedRevision is the ControllerRevision OpenKruise v1.9.0 records for cs: a strategic merge
// patch replacing spec.template, made from the v1alpha1 object's JSON, named
// "<cloneset>-<hash of the patch and collision count 0>", labelled with the template's labels
// and the hash, annotated with the CloneSet's annotations. (It also writes a hash of the claim
// templates in an annotation, which kruise does not read.)
func releasedRevision(t *testing.T, cs *v1alpha1.CloneSet) *appsv1.ControllerRevision {
	t.Helper()
	raw, err := json.Marshal(cs)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj))
	template := obj["spec"].(map[string]any)["template"].(map[string]any)
	template["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
	require.NoError(t, err)
	hash := revision.Hash(data, ptr.To[int32](0))
	labels := map[string]string{revision.HashLabel: hash}
	for k, v := range cs.Spec.Template.Labels {
		labels[k] = v
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: cs.Name + "-" + hash, Namespace: cs.Namespace, Labels: labels,
			Annotations:     cs.Annotations,
			OwnerReferences: []metav1.OwnerReference{releasedOwner(cs)}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: 1,
	}
}

func releasedOwner(cs *v1alpha1.CloneSet) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "CloneSet", Name: cs.Name, UID: cs.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// writeReleasedPod writes pod <cloneset>-<id> and its claim as OpenKruise v1.9.0's CloneSet
// controller makes them (the template, its revision in controller-revision-hash and
// pod-template-hash, the instance id, the InPlaceUpdateReady gate, lifecycle state Normal) with
// the hooks' labels and finalizer a user's operator puts on, running and ready on a node.
func writeReleasedPod(t *testing.T, kube kubernetes.Interface, cs *v1alpha1.CloneSet, id string) *corev1.Pod {
	t.Helper()
	cx := ctx(t)
	rev := cs.Status.UpdateRevision
	name := cs.Name + "-" + id
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-" + name, Namespace: cs.Namespace,
			Labels:          map[string]string{"app": released, v1alpha1.CloneSetInstanceID: id},
			OwnerReferences: []metav1.OwnerReference{releasedOwner(cs)}},
		Spec: cs.Spec.VolumeClaimTemplates[0].Spec,
	}
	_, err := kube.CoreV1().PersistentVolumeClaims(cs.Namespace).Create(cx, claim, metav1.CreateOptions{})
	require.NoError(t, err)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cs.Namespace, GenerateName: cs.Name + "-",
			Labels: map[string]string{"app": released, appsv1.ControllerRevisionHashLabelKey: rev,
				appsv1.DefaultDeploymentUniqueLabelKey: revision.ShortHash(rev), v1alpha1.CloneSetInstanceID: id,
				pub.LifecycleStateKey: string(pub.LifecycleStateNormal), "example.com/deletable": "false", "example.com/updatable": "false"},
			Annotations:     map[string]string{"example.com/note": "kept", pub.LifecycleTimestampKey: time.Now().UTC().Format(time.RFC3339)},
			Finalizers:      []string{"example.com/drain"},
			OwnerReferences: []metav1.OwnerReference{releasedOwner(cs)}},
		Spec: *cs.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = "node-a"
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}
	created, err := kube.CoreV1().Pods(cs.Namespace).Create(cx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { dropFinalizers(kube, created) })

	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &since,
		Conditions: []corev1.PodCondition{
			{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: since},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "nginx:1.27", ImageID: "docker.io/library/nginx@sha256:" + fmt.Sprintf("%064d", 1),
			ContainerID: "containerd://" + id, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: since}}}},
	}
	running, err := kube.CoreV1().Pods(cs.Namespace).UpdateStatus(cx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	return running
}

// dropFinalizers lets the test's namespace go at the end.
func dropFinalizers(kube kubernetes.Interface, pod *corev1.Pod) {
	cx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = kube.CoreV1().Pods(pod.Namespace).Patch(cx, pod.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
}

// writeReleasedCRR writes a completed CRR as OpenKruise v1.9.0 keeps one: its webhook's labels,
// status context, pre-stop and ports filled in, the annotations its controller writes, and the
// status its daemon wrote.
func writeReleasedCRR(t *testing.T, c *cluster) *v1alpha1.ContainerRecreateRequest {
	t.Helper()
	cx := ctx(t)
	pod := released + "-" + releasedIDs[0]
	crr := &v1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "restart-main", Namespace: migrationNS,
			Labels: map[string]string{v1alpha1.ContainerRecreateRequestPodUIDKey: "0f2c4a53-3d1e-4f41-9c55-2f6a1b7e9d10",
				v1alpha1.ContainerRecreateRequestNodeNameKey: "node-a"},
			Annotations: map[string]string{v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: `[{"name":"main","ready":true,"restartCount":0,"containerID":"containerd://x7k2p"}]`,
				v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "true"}},
		Spec: v1alpha1.ContainerRecreateRequestSpec{
			PodName: pod,
			Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "main",
				PreStop:       &v1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 1"}}},
				Ports:         []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				StatusContext: &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://x7k2p", RestartCount: 0}}},
			Strategy: &v1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: v1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
				OrderedRecreate: true, ForceRecreate: true, TerminationGracePeriodSeconds: ptr.To[int64](20),
				UnreadyGracePeriodSeconds: ptr.To[int64](3), MinStartedSeconds: 2},
			ActiveDeadlineSeconds:   ptr.To[int64](300),
			TTLSecondsAfterFinished: ptr.To[int32](86400),
		},
	}
	created, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(migrationNS).Create(cx, crr, metav1.CreateOptions{})
	require.NoError(t, err)
	done := metav1.NewTime(time.Now().Truncate(time.Second))
	created.Status = v1alpha1.ContainerRecreateRequestStatus{Phase: v1alpha1.ContainerRecreateRequestCompleted, CompletionTime: &done,
		Message: "recreated", ContainerRecreateStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{
			{Name: "main", Phase: v1alpha1.ContainerRecreateRequestSucceeded, IsKilled: true}}}
	written, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(migrationNS).UpdateStatus(cx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, created.Status, written.Status)
	return written
}

// testTakeOver runs kruise's CloneSet controller on the migrated CloneSet until it has reconciled
// it twice, and checks that it kept the release's revision and every pod.
func testTakeOver(t *testing.T, c *cluster, kube kubernetes.Interface, cs *v1alpha1.CloneSet, pods map[string]types.UID) {
	_, tctx := ktesting.NewTestContext(t)
	tctx, cancel := context.WithCancel(tctx)
	defer cancel()
	kf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(migrationNS))
	xf := kruiseinformers.NewSharedInformerFactoryWithOptions(c.kruise, 0, kruiseinformers.WithNamespace(migrationNS))
	reg := prometheus.NewRegistry()
	ctrl, err := cloneset.New(cloneset.Config{
		Config:    ctrlbase.Config{Client: kube, KruiseClient: c.kruise},
		CloneSets: xf.Apps().V1beta1().CloneSets(),
		Pods:      kf.Core().V1().Pods(),
		Claims:    kf.Core().V1().PersistentVolumeClaims(),
		Revisions: kf.Apps().V1().ControllerRevisions(),
		Metrics:   reg,
	})
	require.NoError(t, err)
	kf.Start(tctx.Done())
	xf.Start(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	xf.WaitForCacheSync(tctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctrl.Run(tctx, 1)
	}()
	defer func() { cancel(); <-done }()

	waitFor(t, "a reconcile of the CloneSet", func(context.Context) (bool, error) { return reconciles(t, reg) >= 1, nil })
	// And one more, started after the first has acted on whatever it decided.
	first := reconciles(t, reg)
	_, err = c.kruise.AppsV1beta1().CloneSets(migrationNS).Patch(ctx(t), cs.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"example.com/poke":"1"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitFor(t, "another reconcile of the CloneSet", func(context.Context) (bool, error) { return reconciles(t, reg) > first, nil })

	list, err := kube.CoreV1().Pods(migrationNS).List(ctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	got := map[string]types.UID{}
	for _, p := range list.Items {
		got[p.Name] = p.UID
		assert.Nil(t, p.DeletionTimestamp, "pod %s deleted", p.Name)
		assert.Equal(t, cs.Status.UpdateRevision, p.Labels[appsv1.ControllerRevisionHashLabelKey], "pod %s moved to another revision", p.Name)
	}
	assert.Equal(t, pods, got, "the same pods, none created or replaced")
	revs, err := kube.AppsV1().ControllerRevisions(migrationNS).List(ctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, revs.Items, 1, "the release's revision is kruise's too")
	assert.Equal(t, cs.Status.UpdateRevision, revs.Items[0].Name)
	beta, err := c.kruise.AppsV1beta1().CloneSets(migrationNS).Get(ctx(t), cs.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, cs.Status.UpdateRevision, beta.Status.UpdateRevision)
	assert.Equal(t, cs.Status.UpdateRevision, beta.Status.CurrentRevision)
	assert.Equal(t, int32(3), beta.Status.UpdatedReadyReplicas)
}

// reconciles counts the CloneSet controller's successful reconciles.
func reconciles(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "kruise_cloneset_reconcile_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "ok" {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
