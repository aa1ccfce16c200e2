package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const ns = "kruise-it"

func TestAPI(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	t.Run("Versions", func(t *testing.T) { testVersions(t, c) })
	t.Run("Defaults", func(t *testing.T) { testDefaults(t, c) })
	t.Run("ContainerRecreateRequestValidation", func(t *testing.T) { testCRRValidation(t, c) })
	t.Run("ContainerRecreateRequestStatus", func(t *testing.T) { testCRRStatus(t, c) })
	t.Run("ImagePullJobValidation", func(t *testing.T) { testImagePullJobValidation(t, c) })
	t.Run("NodeImageValidation", func(t *testing.T) { testNodeImageValidation(t, c) })
	t.Run("SharedObjectBounds", func(t *testing.T) { testSharedObjectBounds(t, c) })
	t.Run("ReferenceRules", func(t *testing.T) { testReferenceRules(t, c) })
	t.Run("PrinterColumns", func(t *testing.T) { testPrinterColumns(t, c) })
	t.Run("ReapplyCRDs", func(t *testing.T) { testReapplyCRDs(t, c) })
	t.Run("DaemonClient", func(t *testing.T) { testDaemonClient(t, c) })
	t.Run("DaemonEvents", func(t *testing.T) { testDaemonEvents(t, c) })
}

func ctx(t *testing.T) context.Context {
	cx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return cx
}

// fullTemplate sets every field of the shared job template.
func fullTemplate() v1alpha1.ImagePullJobTemplate {
	return v1alpha1.ImagePullJobTemplate{
		PullSecrets: []string{"regcred", "other"},
		Selector: &v1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{
			MatchLabels: map[string]string{"pool": "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
			},
		}},
		Parallelism: ptr.To(intstr.FromInt32(4)),
		PullPolicy:  &v1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](120), BackoffLimit: ptr.To[int32](5)},
		CompletionPolicy: v1alpha1.CompletionPolicy{
			Type: v1alpha1.Always, ActiveDeadlineSeconds: ptr.To[int64](1200), TTLSecondsAfterFinished: ptr.To[int32](60),
		},
		SandboxConfig:   &v1alpha1.SandboxConfig{Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "2"}},
		ImagePullPolicy: v1alpha1.PullAlways,
	}
}

func testVersions(t *testing.T, c *cluster) {
	cx := ctx(t)

	// Served and storage versions as OpenKruise 1.9 has them.
	want := map[string]struct {
		served  []string
		storage string
	}{
		"containerrecreaterequests.apps.kruise.io": {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"imagepulljobs.apps.kruise.io":             {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"imagelistpulljobs.apps.kruise.io":         {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"nodeimages.apps.kruise.io":                {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"clonesets.apps.kruise.io":                 {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"daemonsets.apps.kruise.io":                {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"statefulsets.apps.kruise.io":              {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"sidecarsets.apps.kruise.io":               {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"workloadspreads.apps.kruise.io":           {[]string{"v1alpha1"}, "v1alpha1"},
		"broadcastjobs.apps.kruise.io":             {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"advancedcronjobs.apps.kruise.io":          {[]string{"v1alpha1", "v1beta1"}, "v1beta1"},
		"ephemeraljobs.apps.kruise.io":             {[]string{"v1alpha1"}, "v1alpha1"},
		"podprobemarkers.apps.kruise.io":           {[]string{"v1alpha1"}, "v1alpha1"},
		"nodepodprobes.apps.kruise.io":             {[]string{"v1alpha1"}, "v1alpha1"},
		"uniteddeployments.apps.kruise.io":         {[]string{"v1alpha1"}, "v1alpha1"},
		"persistentpodstates.apps.kruise.io":       {[]string{"v1alpha1"}, "v1alpha1"},
		"resourcedistributions.apps.kruise.io":     {[]string{"v1alpha1"}, "v1alpha1"},
	}
	for name, w := range want {
		crd, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(cx, name, metav1.GetOptions{})
		require.NoError(t, err)
		var served []string
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
			if v.Storage {
				assert.Equal(t, w.storage, v.Name, "%s storage version", name)
			}
		}
		assert.ElementsMatch(t, w.served, served, "%s served versions", name)
		assert.Equal(t, apiextensionsv1.NoneConverter, crd.Spec.Conversion.Strategy, "%s conversion", name)
	}

	// ImagePullJob written as v1alpha1 reads back as v1beta1 with every field.
	alphaJob := &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "versions", Namespace: ns, Labels: map[string]string{"k": "v"}},
		Spec:       v1alpha1.ImagePullJobSpec{Image: "registry.example/app:v1", ImagePullJobTemplate: fullTemplate()},
	}
	created, err := c.kruise.AppsV1alpha1().ImagePullJobs(ns).Create(cx, alphaJob, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, alphaJob.Spec, created.Spec, "v1alpha1 create must keep every field")
	created.Status = v1alpha1.ImagePullJobStatus{
		StartTime: ptr.To(metav1.Unix(1700000000, 0)), CompletionTime: ptr.To(metav1.Unix(1700000100, 0)),
		Desired: 5, Active: 1, Succeeded: 2, Failed: 2, Message: "two failed", FailedNodes: []string{"n1", "n2"},
	}
	created, err = c.kruise.AppsV1alpha1().ImagePullJobs(ns).UpdateStatus(cx, created, metav1.UpdateOptions{})
	require.NoError(t, err)

	betaJob, err := c.kruise.AppsV1beta1().ImagePullJobs(ns).Get(cx, "versions", metav1.GetOptions{})
	require.NoError(t, err)
	expected := v1alpha1.ImagePullJobToV1beta1(created)
	assert.Equal(t, expected.Spec, betaJob.Spec)
	assertSameTimes(t, expected.Status.StartTime, betaJob.Status.StartTime)
	assertSameTimes(t, expected.Status.CompletionTime, betaJob.Status.CompletionTime)
	expected.Status.StartTime, expected.Status.CompletionTime = betaJob.Status.StartTime, betaJob.Status.CompletionTime
	assert.Equal(t, expected.Status, betaJob.Status)
	assert.Equal(t, created.Labels, betaJob.Labels)

	// ImageListPullJob likewise.
	alphaList := &v1alpha1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "versions", Namespace: ns},
		Spec:       v1alpha1.ImageListPullJobSpec{Images: []string{"a:1", "b:2"}, ImagePullJobTemplate: fullTemplate()},
	}
	createdList, err := c.kruise.AppsV1alpha1().ImageListPullJobs(ns).Create(cx, alphaList, metav1.CreateOptions{})
	require.NoError(t, err)
	createdList.Status = v1alpha1.ImageListPullJobStatus{
		Desired: 2, Active: 1, Completed: 1, Succeeded: 0,
		FailedImageStatuses: []*v1alpha1.FailedImageStatus{{ImagePullJob: "versions-a", Name: "a:1", Message: "x"}},
	}
	createdList, err = c.kruise.AppsV1alpha1().ImageListPullJobs(ns).UpdateStatus(cx, createdList, metav1.UpdateOptions{})
	require.NoError(t, err)
	betaList, err := c.kruise.AppsV1beta1().ImageListPullJobs(ns).Get(cx, "versions", metav1.GetOptions{})
	require.NoError(t, err)
	expectedList := v1alpha1.ImageListPullJobToV1beta1(createdList)
	assert.Equal(t, expectedList.Spec, betaList.Spec)
	assert.Equal(t, expectedList.Status, betaList.Status)

	// NodeImage written as v1alpha1 reads back as v1beta1 with every field.
	alphaNI := &v1alpha1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: "node-versions"},
		Spec: v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{
			"registry.example/app": {
				PullSecrets:   []v1alpha1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "s1"}},
				SandboxConfig: &v1alpha1.SandboxConfig{Labels: map[string]string{"x": "y"}},
				Tags: []v1alpha1.ImageTagSpec{{
					Tag:       "v1",
					CreatedAt: ptr.To(metav1.Unix(1700000000, 0)),
					PullPolicy: &v1alpha1.ImageTagPullPolicy{
						TimeoutSeconds: ptr.To[int32](30), BackoffLimit: ptr.To[int32](1),
						TTLSecondsAfterFinished: ptr.To[int32](10), ActiveDeadlineSeconds: ptr.To[int64](90),
					},
					OwnerReferences: []corev1.ObjectReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Name: "j", Namespace: ns, UID: "u-1"}},
					Version:         7,
					ImagePullPolicy: v1alpha1.PullIfNotPresent,
				}},
			},
		}},
	}
	createdNI, err := c.kruise.AppsV1alpha1().NodeImages().Create(cx, alphaNI, metav1.CreateOptions{})
	require.NoError(t, err)
	betaNI, err := c.kruise.AppsV1beta1().NodeImages().Get(cx, "node-versions", metav1.GetOptions{})
	require.NoError(t, err)
	expectedNI := v1alpha1.NodeImageToV1beta1(createdNI)
	require.Len(t, betaNI.Spec.Images, 1)
	gotTag := betaNI.Spec.Images["registry.example/app"].Tags[0]
	wantTag := expectedNI.Spec.Images["registry.example/app"].Tags[0]
	assertSameTimes(t, wantTag.CreatedAt, gotTag.CreatedAt)
	wantTag.CreatedAt = gotTag.CreatedAt
	assert.Equal(t, wantTag, gotTag)
	assert.Equal(t, expectedNI.Spec.Images["registry.example/app"].PullSecrets, betaNI.Spec.Images["registry.example/app"].PullSecrets)
	assert.Equal(t, expectedNI.Spec.Images["registry.example/app"].SandboxConfig, betaNI.Spec.Images["registry.example/app"].SandboxConfig)

	// The v1beta1-only pull-secret "mode" survives in storage and v1beta1 reads.
	// Under conversion strategy None a v1alpha1 reader does not see it (the API
	// server prunes fields unknown to the version read), exactly as with
	// OpenKruise's CRDs; see docs/api.md.
	img := betaNI.Spec.Images["registry.example/app"]
	img.PullSecrets[0].Mode = v1beta1.ReferenceObjectModeBatch
	betaNI.Spec.Images["registry.example/app"] = img
	_, err = c.kruise.AppsV1beta1().NodeImages().Update(cx, betaNI, metav1.UpdateOptions{})
	require.NoError(t, err)
	again, err := c.kruise.AppsV1beta1().NodeImages().Get(cx, "node-versions", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1beta1.ReferenceObjectModeBatch, again.Spec.Images["registry.example/app"].PullSecrets[0].Mode)
	raw, err := c.kruise.AppsV1alpha1().RESTClient().Get().Resource("nodeimages").Name("node-versions").DoRaw(cx)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"mode"`, "v1alpha1 has no mode field")
	assert.Contains(t, string(raw), `"apiVersion":"apps.kruise.io/v1alpha1"`)

	testCRRVersions(t, c)

	// Only v1beta1 is in storedVersions: every object above was stored as v1beta1.
	for _, name := range []string{"imagepulljobs.apps.kruise.io", "nodeimages.apps.kruise.io", "imagelistpulljobs.apps.kruise.io", "containerrecreaterequests.apps.kruise.io"} {
		crd, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(cx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"v1beta1"}, crd.Status.StoredVersions, name)
	}
}

func assertSameTimes(t *testing.T, want, got *metav1.Time) {
	t.Helper()
	require.NotNil(t, got)
	require.NotNil(t, want)
	assert.True(t, want.Equal(got), "time %v != %v", want, got)
}

func testDefaults(t *testing.T, c *cluster) {
	cx := ctx(t)

	job, err := c.kruise.AppsV1beta1().ImagePullJobs(ns).Create(cx, &v1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec:       v1beta1.ImagePullJobSpec{Image: "registry.example/app:v1"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromInt32(1), *job.Spec.Parallelism)
	require.NotNil(t, job.Spec.PullPolicy)
	assert.Equal(t, int32(600), *job.Spec.PullPolicy.TimeoutSeconds)
	assert.Equal(t, int32(3), *job.Spec.PullPolicy.BackoffLimit)
	assert.Equal(t, v1beta1.PullIfNotPresent, job.Spec.ImagePullPolicy)
	assert.Equal(t, v1beta1.Always, job.Spec.CompletionPolicy.Type)

	// The same defaults show through v1alpha1.
	alpha, err := c.kruise.AppsV1alpha1().ImagePullJobs(ns).Get(cx, "defaults", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(600), *alpha.Spec.PullPolicy.TimeoutSeconds)

	// A partly set pullPolicy gets the missing half.
	job2, err := c.kruise.AppsV1alpha1().ImagePullJobs(ns).Create(cx, &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults-partial", Namespace: ns},
		Spec: v1alpha1.ImagePullJobSpec{Image: "registry.example/app:v1", ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			PullPolicy: &v1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](0)},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(600), *job2.Spec.PullPolicy.TimeoutSeconds)
	assert.Equal(t, int32(0), *job2.Spec.PullPolicy.BackoffLimit)

	list, err := c.kruise.AppsV1beta1().ImageListPullJobs(ns).Create(cx, &v1beta1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec:       v1beta1.ImageListPullJobSpec{Images: []string{"a:1"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromInt32(1), *list.Spec.Parallelism)
	assert.Equal(t, int32(600), *list.Spec.PullPolicy.TimeoutSeconds)
	assert.Equal(t, int32(3), *list.Spec.PullPolicy.BackoffLimit)
	assert.Equal(t, v1beta1.Always, list.Spec.CompletionPolicy.Type)

	ni, err := c.kruise.AppsV1beta1().NodeImages().Create(cx, &v1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: "node-defaults"},
		Spec: v1beta1.NodeImageSpec{Images: map[string]v1beta1.ImageSpec{
			"registry.example/app": {Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}}},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pp := ni.Spec.Images["registry.example/app"].Tags[0].PullPolicy
	require.NotNil(t, pp)
	assert.Equal(t, int32(600), *pp.TimeoutSeconds)
	assert.Equal(t, int32(3), *pp.BackoffLimit)

	crr, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Create(cx, newCRR("defaults"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotNil(t, crr.Spec.Strategy)
	assert.Equal(t, v1alpha1.ContainerRecreateRequestFailurePolicyFail, crr.Spec.Strategy.FailurePolicy)
}

func newCRR(name string) *v1alpha1.ContainerRecreateRequest {
	return gen.CRR(name, gen.SetCRRNamespace(ns), gen.SetCRRLabels(map[string]string{
		v1alpha1.ContainerRecreateRequestNodeNameKey: "node-1",
		v1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}), gen.SetCRRPodName("pod-1"), gen.SetCRRContainers("app", "sidecar"))
}

func testCRRValidation(t *testing.T, c *cluster) {
	cx := ctx(t)
	crrs := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns)

	// Create-time rules: enum, minimum, required items.
	bad := newCRR("bad-policy")
	bad.Spec.Strategy = &v1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: "Sometimes"}
	_, err := crrs.Create(cx, bad, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.strategy.failurePolicy")

	bad = newCRR("bad-deadline")
	bad.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
	_, err = crrs.Create(cx, bad, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.activeDeadlineSeconds")

	bad = newCRR("bad-grace")
	bad.Spec.Strategy = &v1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](-1)}
	_, err = crrs.Create(cx, bad, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.strategy.terminationGracePeriodSeconds")

	bad = newCRR("no-containers")
	bad.Spec.Containers = nil
	_, err = crrs.Create(cx, bad, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.containers")

	bad = newCRR("dup-containers")
	bad.Spec.Containers = []v1alpha1.ContainerRecreateRequestContainer{{Name: "app"}, {Name: "app"}}
	_, err = crrs.Create(cx, bad, metav1.CreateOptions{})
	requireInvalid(t, err, "Duplicate value")

	ok := newCRR("immutable")
	ok.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	crr, err := crrs.Create(cx, ok, metav1.CreateOptions{})
	require.NoError(t, err)

	// update applies mutate to a fresh copy and returns the API server's answer.
	update := func(mutate func(*v1alpha1.ContainerRecreateRequest)) (*v1alpha1.ContainerRecreateRequest, error) {
		cur, err := crrs.Get(cx, "immutable", metav1.GetOptions{})
		require.NoError(t, err)
		mutate(cur)
		return crrs.Update(cx, cur, metav1.UpdateOptions{})
	}

	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) { o.Spec.PodName = "pod-2" })
	requireInvalid(t, err, "spec.podName is immutable")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) { o.Spec.Strategy.ForceRecreate = true })
	requireInvalid(t, err, "spec.strategy is immutable")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) { o.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) })
	requireInvalid(t, err, "spec.activeDeadlineSeconds is immutable")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) { o.Spec.TTLSecondsAfterFinished = ptr.To[int32](60) })
	requireInvalid(t, err, "spec.ttlSecondsAfterFinished is immutable")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) {
		o.Spec.Containers = append(o.Spec.Containers, v1alpha1.ContainerRecreateRequestContainer{Name: "third"})
	})
	requireInvalid(t, err, "cannot be added, removed or reordered")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) {
		o.Spec.Containers[0], o.Spec.Containers[1] = o.Spec.Containers[1], o.Spec.Containers[0]
	})
	requireInvalid(t, err, "cannot be added, removed or reordered")

	// Metadata stays writable (the controller removes the active label).
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) {
		delete(o.Labels, v1alpha1.ContainerRecreateRequestActiveKey)
	})
	require.NoError(t, err)

	// The system-filled fields may be set once while empty...
	crr, err = update(func(o *v1alpha1.ContainerRecreateRequest) {
		o.Spec.Containers[0].StatusContext = &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://abc", RestartCount: 1}
		o.Spec.Containers[0].PreStop = &v1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 1"}}}
		o.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	})
	require.NoError(t, err)
	assert.Equal(t, "containerd://abc", crr.Spec.Containers[0].StatusContext.ContainerID)
	// ...a no-op update still passes...
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) {})
	require.NoError(t, err)
	// ...and they cannot change or go away afterwards.
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) {
		o.Spec.Containers[0].StatusContext.ContainerID = "containerd://def"
	})
	requireInvalid(t, err, "statusContext may be set once")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) { o.Spec.Containers[0].StatusContext.RestartCount = 2 })
	requireInvalid(t, err, "statusContext may be set once")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) { o.Spec.Containers[0].StatusContext = nil })
	requireInvalid(t, err, "statusContext may be set once")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) {
		o.Spec.Containers[0].PreStop.Exec.Command = []string{"true"}
	})
	requireInvalid(t, err, "preStop may be set once")
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) { o.Spec.Containers[0].Ports[0].ContainerPort = 9090 })
	requireInvalid(t, err, "ports may be set once")
	// The other container's context can still be filled in.
	_, err = update(func(o *v1alpha1.ContainerRecreateRequest) {
		o.Spec.Containers[1].StatusContext = &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://xyz"}
	})
	require.NoError(t, err)
}

func testCRRStatus(t *testing.T, c *cluster) {
	cx := ctx(t)
	crrs := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns)
	crr, err := crrs.Create(cx, newCRR("status"), metav1.CreateOptions{})
	require.NoError(t, err)

	setStatus := func(phase v1alpha1.ContainerRecreateRequestPhase, msg string) error {
		cur, err := crrs.Get(cx, "status", metav1.GetOptions{})
		require.NoError(t, err)
		cur.Status.Phase, cur.Status.Message = phase, msg
		_, err = crrs.UpdateStatus(cx, cur, metav1.UpdateOptions{})
		return err
	}

	requireInvalid(t, setStatus("Running", ""), "status.phase")
	require.NoError(t, setStatus(v1alpha1.ContainerRecreateRequestPending, ""))
	require.NoError(t, setStatus(v1alpha1.ContainerRecreateRequestRecreating, ""))

	cur, err := crrs.Get(cx, "status", metav1.GetOptions{})
	require.NoError(t, err)
	cur.Status.ContainerRecreateStates = []v1alpha1.ContainerRecreateRequestContainerRecreateState{{Name: "app", Phase: "Done"}}
	_, err = crrs.UpdateStatus(cx, cur, metav1.UpdateOptions{})
	requireInvalid(t, err, "status.containerRecreateStates[0].phase")

	require.NoError(t, setStatus(v1alpha1.ContainerRecreateRequestCompleted, "done"))
	requireInvalid(t, setStatus(v1alpha1.ContainerRecreateRequestRecreating, ""), "a Completed ContainerRecreateRequest cannot change phase")
	requireInvalid(t, setStatus(v1alpha1.ContainerRecreateRequestPending, ""), "a Completed ContainerRecreateRequest cannot change phase")
	require.NoError(t, setStatus(v1alpha1.ContainerRecreateRequestCompleted, "done, message updated"))
	_ = crr
}

func newJob(name string) *v1beta1.ImagePullJob {
	return gen.ImagePullJob(name, gen.SetImagePullJobNamespace(ns), gen.SetImagePullJobImage("registry.example/app:v1"))
}

func testImagePullJobValidation(t *testing.T, c *cluster) {
	cx := ctx(t)
	jobs := c.kruise.AppsV1beta1().ImagePullJobs(ns)

	cases := []struct {
		name   string
		mutate func(*v1beta1.ImagePullJob)
		reject string // "" = accepted
	}{
		{"both-selectors", func(j *v1beta1.ImagePullJob) {
			j.Spec.Selector = &v1beta1.ImagePullJobNodeSelector{Names: []string{"n1"}}
			j.Spec.PodSelector = &v1beta1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}
		}, "selector and podSelector are mutually exclusive"},
		{"node-selector-only", func(j *v1beta1.ImagePullJob) {
			j.Spec.Selector = &v1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}
		}, ""},
		{"pod-selector-only", func(j *v1beta1.ImagePullJob) {
			j.Spec.PodSelector = &v1beta1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}
		}, ""},
		{"names-and-labels", func(j *v1beta1.ImagePullJob) {
			j.Spec.Selector = &v1beta1.ImagePullJobNodeSelector{Names: []string{"n1"}, LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}
		}, "selector.names cannot be combined"},
		{"duplicate-names", func(j *v1beta1.ImagePullJob) {
			j.Spec.Selector = &v1beta1.ImagePullJobNodeSelector{Names: []string{"n1", "n1"}}
		}, "Duplicate value"},
		{"negative-parallelism", func(j *v1beta1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(-1)) }, "parallelism must be a non-negative integer"},
		{"percent-parallelism", func(j *v1beta1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromString("50%")) }, "parallelism must be a non-negative integer"},
		{"string-parallelism", func(j *v1beta1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromString("3")) }, ""},
		{"zero-parallelism", func(j *v1beta1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(0)) }, ""},
		{"never-with-deadline", func(j *v1beta1.ImagePullJob) {
			j.Spec.CompletionPolicy = v1beta1.CompletionPolicy{Type: v1beta1.Never, ActiveDeadlineSeconds: ptr.To[int64](3600)}
		}, "require completionPolicy type Always"},
		{"never-with-ttl", func(j *v1beta1.ImagePullJob) {
			j.Spec.CompletionPolicy = v1beta1.CompletionPolicy{Type: v1beta1.Never, TTLSecondsAfterFinished: ptr.To[int32](10)}
		}, "require completionPolicy type Always"},
		{"never", func(j *v1beta1.ImagePullJob) { j.Spec.CompletionPolicy = v1beta1.CompletionPolicy{Type: v1beta1.Never} }, ""},
		{"deadline-below-timeout", func(j *v1beta1.ImagePullJob) {
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](300) // default timeout is 600
		}, "must be at least pullPolicy.timeoutSeconds"},
		{"deadline-above-timeout", func(j *v1beta1.ImagePullJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](601) }, ""},
		{"bad-completion-type", func(j *v1beta1.ImagePullJob) { j.Spec.CompletionPolicy.Type = "Sometimes" }, "spec.completionPolicy.type"},
		{"other-pull-policy", func(j *v1beta1.ImagePullJob) { j.Spec.ImagePullPolicy = "Never" }, ""}, // pulls as Always, as in OpenKruise
		{"empty-image", func(j *v1beta1.ImagePullJob) { j.Spec.Image = "" }, "spec.image"},
		{"zero-timeout", func(j *v1beta1.ImagePullJob) {
			j.Spec.PullPolicy = &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](0)}
		}, ""}, // admitted, as OpenKruise does (read as the default)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(tc.name)
			tc.mutate(j)
			_, err := jobs.Create(cx, j, metav1.CreateOptions{})
			if tc.reject == "" {
				require.NoError(t, err)
				return
			}
			requireInvalid(t, err, tc.reject)
		})
	}

	// The same rules hold on ImageListPullJob, which shares the template.
	list := &v1alpha1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "both-selectors", Namespace: ns},
		Spec: v1alpha1.ImageListPullJobSpec{Images: []string{"a:1"}, ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			Selector:    &v1alpha1.ImagePullJobNodeSelector{Names: []string{"n1"}},
			PodSelector: &v1alpha1.ImagePullJobPodSelector{},
		}},
	}
	_, err := c.kruise.AppsV1alpha1().ImageListPullJobs(ns).Create(cx, list, metav1.CreateOptions{})
	requireInvalid(t, err, "selector and podSelector are mutually exclusive")
	list.Spec.PodSelector, list.Spec.Images = nil, nil
	_, err = c.kruise.AppsV1alpha1().ImageListPullJobs(ns).Create(cx, list, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.images")
}

func testNodeImageValidation(t *testing.T, c *cluster) {
	cx := ctx(t)
	nis := c.kruise.AppsV1beta1().NodeImages()
	// Any imagePullPolicy, as in OpenKruise (another value pulls as Always).
	_, err := nis.Create(cx, &v1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: "node-other-policy"},
		Spec: v1beta1.NodeImageSpec{Images: map[string]v1beta1.ImageSpec{
			"registry.example/app": {Tags: []v1beta1.ImageTagSpec{{Tag: "v1", ImagePullPolicy: "Sometimes"}}},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	ni, err := nis.Create(cx, &v1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: "node-validation"},
		Spec: v1beta1.NodeImageSpec{Images: map[string]v1beta1.ImageSpec{
			"registry.example/app": {Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}}},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	tag := v1beta1.ImageTagStatus{Tag: "v1", Phase: "Unknown"}
	ni.Status = v1beta1.NodeImageStatus{Desired: 1, ImageStatuses: map[string]v1beta1.ImageStatus{"registry.example/app": {Tags: []v1beta1.ImageTagStatus{tag}}}}
	_, err = nis.UpdateStatus(cx, ni, metav1.UpdateOptions{})
	requireInvalid(t, err, "phase")

	tag.Phase, tag.Progress = v1beta1.ImagePhasePulling, 101
	ni.Status.ImageStatuses["registry.example/app"] = v1beta1.ImageStatus{Tags: []v1beta1.ImageTagStatus{tag}}
	_, err = nis.UpdateStatus(cx, ni, metav1.UpdateOptions{})
	requireInvalid(t, err, "progress")

	tag.Progress = 40
	ni.Status.ImageStatuses["registry.example/app"] = v1beta1.ImageStatus{Tags: []v1beta1.ImageTagStatus{tag}}
	ni.Status.Pulling = 1
	_, err = nis.UpdateStatus(cx, ni, metav1.UpdateOptions{})
	require.NoError(t, err)

	// At most 256 images per NodeImage.
	many := map[string]v1beta1.ImageSpec{}
	for i := 0; i <= v1beta1.MaxImagesPerNodeImage; i++ {
		many[fmt.Sprintf("registry.example/img-%d", i)] = v1beta1.ImageSpec{Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}}}
	}
	_, err = nis.Create(cx, &v1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "node-many"}, Spec: v1beta1.NodeImageSpec{Images: many}}, metav1.CreateOptions{})
	requireInvalid(t, err, "spec.images")
}

// columns fetches a list as a server-side Table and returns its column names
// and the cells of the row named name.
func columns(t *testing.T, rc rest.Interface, namespace, resource, name string) ([]string, map[string]any) {
	t.Helper()
	req := rc.Get().Resource(resource).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if namespace != "" {
		req = req.Namespace(namespace)
	}
	raw, err := req.DoRaw(ctx(t))
	require.NoError(t, err)
	table := &metav1.Table{}
	require.NoError(t, json.Unmarshal(raw, table))
	var names []string
	for _, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
	}
	for _, row := range table.Rows {
		if len(row.Cells) > 0 && row.Cells[0] == name {
			cells := map[string]any{}
			for i, col := range table.ColumnDefinitions {
				cells[col.Name] = row.Cells[i]
			}
			return names, cells
		}
	}
	require.Failf(t, "row not found", "no row %q in %s table", name, resource)
	return nil, nil
}

func testPrinterColumns(t *testing.T, c *cluster) {
	cx := ctx(t)
	_, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Create(cx, newCRR("columns"), metav1.CreateOptions{})
	require.NoError(t, err)
	names, cells := columns(t, c.kruise.AppsV1alpha1().RESTClient(), ns, "containerrecreaterequests", "columns")
	assert.Subset(t, names, []string{"Name", "PHASE", "POD", "NODE", "AGE"})
	assert.Equal(t, "pod-1", cells["POD"])
	assert.Equal(t, "node-1", cells["NODE"])

	job, err := c.kruise.AppsV1beta1().ImagePullJobs(ns).Create(cx, newJob("columns"), metav1.CreateOptions{})
	require.NoError(t, err)
	job.Status = v1beta1.ImagePullJobStatus{Desired: 3, Succeeded: 2, Failed: 1}
	_, err = c.kruise.AppsV1beta1().ImagePullJobs(ns).UpdateStatus(cx, job, metav1.UpdateOptions{})
	require.NoError(t, err)
	for _, rc := range []rest.Interface{c.kruise.AppsV1beta1().RESTClient(), c.kruise.AppsV1alpha1().RESTClient()} {
		names, cells = columns(t, rc, ns, "imagepulljobs", "columns")
		assert.Subset(t, names, []string{"Name", "IMAGE", "TOTAL", "SUCCEED", "FAILED", "AGE"})
		assert.Equal(t, "registry.example/app:v1", cells["IMAGE"])
		assert.EqualValues(t, 3, cells["TOTAL"])
		assert.EqualValues(t, 2, cells["SUCCEED"])
		assert.EqualValues(t, 1, cells["FAILED"])
	}

	names, _ = columns(t, c.kruise.AppsV1beta1().RESTClient(), ns, "imagelistpulljobs", "defaults")
	assert.Subset(t, names, []string{"Name", "TOTAL", "SUCCEEDED", "COMPLETED", "AGE"})

	ni, err := c.kruise.AppsV1beta1().NodeImages().Create(cx, &v1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "node-columns"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ni.Status = v1beta1.NodeImageStatus{Desired: 4, Pulling: 1, Succeeded: 2, Failed: 1}
	_, err = c.kruise.AppsV1beta1().NodeImages().UpdateStatus(cx, ni, metav1.UpdateOptions{})
	require.NoError(t, err)
	names, cells = columns(t, c.kruise.AppsV1beta1().RESTClient(), "", "nodeimages", "node-columns")
	assert.Subset(t, names, []string{"Name", "DESIRED", "PULLING", "SUCCEED", "FAILED", "AGE"})
	assert.EqualValues(t, 4, cells["DESIRED"])
	assert.EqualValues(t, 1, cells["PULLING"])
}

// testReapplyCRDs applies the manifests from deploy/base/crds again over the
// installed CRDs after objects of every kind have been stored, as an upgrade
// would, and checks every stored version is still served.
func testReapplyCRDs(t *testing.T, c *cluster) {
	cx := ctx(t)
	files, err := filepath.Glob("../../deploy/base/crds/apps.kruise.io_*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		want := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(raw, want), f)

		cur, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Get(cx, want.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, cur.Status.StoredVersions, want.Name)
		want.ResourceVersion = cur.ResourceVersion
		_, err = c.apiext.ApiextensionsV1().CustomResourceDefinitions().Update(cx, want, metav1.UpdateOptions{})
		require.NoError(t, err, want.Name)

		served := map[string]bool{}
		for _, v := range want.Spec.Versions {
			served[v.Name] = v.Served
		}
		for _, stored := range cur.Status.StoredVersions {
			assert.True(t, served[stored], "%s: stored version %s must stay served", want.Name, stored)
		}
	}
}

// testCRRVersions: a ContainerRecreateRequest written in either version
// reads back in the other with every field, the status fields OpenKruise
// has only in v1beta1 (containerStatusSnapshot, conditions) included.
func testCRRVersions(t *testing.T, c *cluster) {
	cx := ctx(t)
	alpha := newCRR("versions")
	alpha.Spec.Containers[0].PreStop = &v1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
	alpha.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	alpha.Spec.Containers[0].StatusContext = &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://abc", RestartCount: 2}
	alpha.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	alpha.Spec.TTLSecondsAfterFinished = ptr.To[int32](30)
	created, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Create(cx, alpha, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Status = v1alpha1.ContainerRecreateRequestStatus{
		Phase: v1alpha1.ContainerRecreateRequestRecreating, Message: "going",
		ContainerRecreateStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{{Name: "main", Phase: v1alpha1.ContainerRecreateRequestRecreating, IsKilled: true}},
		Conditions: []metav1.Condition{{
			Type: v1alpha1.ContainerRecreateRequestAdmitted, Status: metav1.ConditionTrue, Reason: "PodRunning", Message: "m",
			LastTransitionTime: metav1.Unix(1700000000, 0),
		}},
		CreationRevision: "42",
	}
	created, err = c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).UpdateStatus(cx, created, metav1.UpdateOptions{})
	require.NoError(t, err)

	beta, err := c.kruise.AppsV1beta1().ContainerRecreateRequests(ns).Get(cx, "versions", metav1.GetOptions{})
	require.NoError(t, err)
	want := v1alpha1.ContainerRecreateRequestToV1beta1(created)
	assert.Equal(t, want.Spec, beta.Spec)
	assertSameTimes(t, &want.Status.Conditions[0].LastTransitionTime, &beta.Status.Conditions[0].LastTransitionTime)
	want.Status.Conditions[0].LastTransitionTime = beta.Status.Conditions[0].LastTransitionTime
	assert.Equal(t, want.Status, beta.Status)

	// A v1beta1 client records what OpenKruise's v1beta1 has in status; a
	// v1alpha1 client reads it, and its own status write keeps it.
	beta.Status.ContainerStatusSnapshot = []v1beta1.ContainerRecreateRequestSyncContainerStatus{{Name: "main", Ready: true, RestartCount: 3, ContainerID: "containerd://def"}}
	beta.Status.Conditions = append(beta.Status.Conditions, metav1.Condition{
		Type: v1beta1.ContainerRecreateRequestPreRecreateGraceType, Status: metav1.ConditionTrue, Reason: "PreRecreateGrace", Message: "m",
		LastTransitionTime: metav1.Unix(1700000100, 0),
	})
	beta, err = c.kruise.AppsV1beta1().ContainerRecreateRequests(ns).UpdateStatus(cx, beta, metav1.UpdateOptions{})
	require.NoError(t, err)
	again, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Get(cx, "versions", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, again.Status.ContainerStatusSnapshot, 1)
	assert.Equal(t, v1alpha1.ContainerRecreateRequestSyncContainerStatus{Name: "main", Ready: true, RestartCount: 3, ContainerID: "containerd://def"}, again.Status.ContainerStatusSnapshot[0])
	require.NotNil(t, meta.FindStatusCondition(again.Status.Conditions, v1alpha1.ContainerRecreateRequestPreRecreateGrace))
	again.Status.Message = "still going"
	_, err = c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).UpdateStatus(cx, again, metav1.UpdateOptions{})
	require.NoError(t, err)
	final, err := c.kruise.AppsV1beta1().ContainerRecreateRequests(ns).Get(cx, "versions", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, beta.Status.ContainerStatusSnapshot, final.Status.ContainerStatusSnapshot, "a v1alpha1 write keeps v1beta1's fields")
	assert.Len(t, final.Status.Conditions, 2)
	assert.Equal(t, "still going", final.Status.Message)
}
