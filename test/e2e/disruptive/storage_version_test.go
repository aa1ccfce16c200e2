//go:build e2e

package disruptive

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// migrationChecked is what the leader logs once its first storage version check is done
// (pkg/controller/storageversion).
const migrationChecked = "Every object of kruise's CRDs is stored in the storage version"

// etcdURL is the local cluster's etcd (hack/cluster.sh), read through its JSON gateway to see in
// which version an object is stored.
const etcdURL = "http://127.0.0.1:2379"

// storedVersion is the apiVersion of the object at etcd key /registry/apps.kruise.io/<path>; ""
// when there is none.
func storedVersion(ctx context.Context, path string) (string, error) {
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte("/registry/apps.kruise.io/" + path))})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, etcdURL+"/v3/kv/range", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("reading %s from etcd: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Kvs []struct {
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("decoding etcd's answer for %s: %w", path, err)
	}
	if len(out.Kvs) == 0 {
		return "", nil
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(out.Kvs[0].Value, &obj); err != nil {
		return "", fmt.Errorf("%s is not stored as JSON: %w", path, err)
	}
	return obj.APIVersion, nil
}

// A cluster moving from OpenKruise (whose released v1.9.0 stores CloneSets as v1alpha1) or from
// an older kruise has objects stored as v1alpha1; reading them as v1beta1 needs /convert, which
// the API server calls only on ready kruise-controller replicas. With such SidecarSets and
// CloneSets, every replica is killed at once: kruise becomes ready again by itself, the leader
// rewrites the objects in the storage version (etcd shows v1beta1, the CRDs' storedVersions is
// v1beta1 alone), nothing is lost and the CloneSet's pod is the same pod.
func TestColdStartWithObjectsStoredAsV1alpha1(t *testing.T) {
	ctx := framework.Context(t, 12*time.Minute)
	f := framework.New(t)
	kc := f.KruiseClient(t)
	crds, err := apiextensionsclient.NewForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	before := leaderWaitReplicasAvailable(ctx, t, f, 3*time.Minute)
	// The leader checks the storage versions once as it starts leading (then hourly): objects
	// written as v1alpha1 before that check would be rewritten before the replicas are killed.
	leader, _ := leaderCurrent(ctx, t, f, before)
	framework.WaitFor(ctx, t, 2*time.Minute, "the leader's first storage version check", func(ctx context.Context) (bool, string, error) {
		logs, err := f.PodLogs(ctx, framework.KruiseNamespace, leader.Name, "")
		if err != nil {
			return false, "", framework.Retry(err)
		}
		return strings.Contains(logs, migrationChecked), "not logged yet", nil
	})
	ns := f.NewNamespace(ctx, t, "stored-alpha")
	const csCRD, ssCRD = "clonesets.apps.kruise.io", "sidecarsets.apps.kruise.io"

	setStorage := func(ctx context.Context, crd, version string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for i := range obj.Spec.Versions {
				obj.Spec.Versions[i].Storage = obj.Spec.Versions[i].Name == version
			}
			_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, obj, metav1.UpdateOptions{})
			return err
		})
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, crd := range []string{csCRD, ssCRD} {
			if err := setStorage(ctx, crd, "v1beta1"); err != nil {
				t.Errorf("restoring the storage version of %s: %v", crd, err)
			}
		}
	})

	// A probe written as v1alpha1 is stored in the storage version the API server has taken up.
	probes := 0
	waitStorage := func(version string) {
		t.Helper()
		framework.WaitFor(ctx, t, time.Minute, "CloneSets and SidecarSets stored as "+version, func(ctx context.Context) (bool, string, error) {
			probes++
			name := fmt.Sprintf("e2e-storage-probe-%d", probes)
			cs := storedCloneSet(f, ns, name, 0)
			if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
				return false, "", err
			}
			ss := storedSidecarSet(f, name)
			if _, err := kc.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
				return false, "", err
			}
			csAt, err1 := storedVersion(ctx, "clonesets/"+ns+"/"+name)
			ssAt, err2 := storedVersion(ctx, "sidecarsets/"+name)
			_ = kc.AppsV1alpha1().CloneSets(ns).Delete(ctx, name, metav1.DeleteOptions{})
			_ = kc.AppsV1alpha1().SidecarSets().Delete(ctx, name, metav1.DeleteOptions{})
			if err1 != nil || err2 != nil {
				return false, "", fmt.Errorf("%v; %v", err1, err2)
			}
			want := "apps.kruise.io/" + version
			return csAt == want && ssAt == want, fmt.Sprintf("a CloneSet stored as %s, a SidecarSet as %s", csAt, ssAt), nil
		})
	}
	for _, crd := range []string{csCRD, ssCRD} {
		if err := setStorage(ctx, crd, "v1alpha1"); err != nil {
			t.Fatalf("making v1alpha1 the storage version of %s: %v", crd, err)
		}
	}
	waitStorage("v1alpha1")
	cs := storedCloneSet(f, ns, "stored", 1)
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet %s: %v", cs.Name, err)
	}
	ss := storedSidecarSet(f, ns+"-stored")
	if _, err := kc.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating SidecarSet %s: %v", ss.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = kc.AppsV1beta1().SidecarSets().Delete(ctx, ss.Name, metav1.DeleteOptions{})
	})
	var pod corev1.Pod
	framework.WaitFor(ctx, t, 3*time.Minute, "the CloneSet's pod Ready", func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=stored"})
		if err != nil {
			return false, "", err
		}
		if len(pods.Items) != 1 || !framework.PodReady(&pods.Items[0]) {
			return false, f.DescribePods(ctx, ns, "app=stored"), nil
		}
		pod = pods.Items[0]
		return true, pod.Name, nil
	})

	// Written once more (its status) after the storage version changes back, an object would be
	// stored as v1beta1: both settle first.
	framework.WaitFor(ctx, t, 2*time.Minute, "the CloneSet's and the SidecarSet's status settled", func(ctx context.Context) (bool, string, error) {
		c, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s, err := kc.AppsV1alpha1().SidecarSets().Get(ctx, ss.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st := c.Status
		return st.ObservedGeneration == c.Generation && st.Replicas == 1 && st.AvailableReplicas == 1 && st.UpdatedReadyReplicas == 1 &&
			st.UpdateRevision != "" && s.Status.ObservedGeneration == s.Generation, fmt.Sprintf("CloneSet %+v; SidecarSet %+v", st, s.Status), nil
	})
	// Every replica gone, then the storage version back to v1beta1, as when kruise is installed
	// over OpenKruise: the API server reads the objects anew, and each v1alpha1 one needs /convert,
	// which no replica serves until one is ready.
	up := leaderAllDown(ctx, t, f, int32(len(before)))
	for _, crd := range []string{csCRD, ssCRD} {
		if err := setStorage(ctx, crd, "v1beta1"); err != nil {
			t.Fatalf("making v1beta1 the storage version of %s again: %v", crd, err)
		}
	}
	for path, want := range map[string]string{"clonesets/" + ns + "/stored": "apps.kruise.io/v1alpha1", "sidecarsets/" + ss.Name: "apps.kruise.io/v1alpha1"} {
		if got, err := storedVersion(ctx, path); err != nil || got != want {
			t.Fatalf("%s is stored as %q (%v), want %s", path, got, err, want)
		}
	}
	up()
	leaderWaitReplicasAvailable(ctx, t, f, 4*time.Minute)
	waitStorage("v1beta1")

	framework.WaitFor(ctx, t, 3*time.Minute, "every object stored as v1beta1, storedVersions v1beta1", func(ctx context.Context) (bool, string, error) {
		var desc []string
		done := true
		for _, crd := range []string{csCRD, ssCRD} {
			obj, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			done = done && slices.Equal(obj.Status.StoredVersions, []string{"v1beta1"})
			desc = append(desc, fmt.Sprintf("%s storedVersions %v", crd, obj.Status.StoredVersions))
		}
		for _, path := range []string{"clonesets/" + ns + "/stored", "sidecarsets/" + ss.Name} {
			v, err := storedVersion(ctx, path)
			if err != nil {
				return false, "", err
			}
			done = done && v == "apps.kruise.io/v1beta1"
			desc = append(desc, path+" stored as "+v)
		}
		return done, fmt.Sprint(desc), nil
	})

	alpha, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "stored", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if alpha.Spec.UpdateStrategy.Type != appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType {
		t.Errorf("v1alpha1 updateStrategy.type %q, written InPlaceOnly", alpha.Spec.UpdateStrategy.Type)
	}
	beta, err := kc.AppsV1beta1().CloneSets(ns).Get(ctx, "stored", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ru := beta.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.PodUpdatePolicy != appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType {
		t.Errorf("v1beta1 updateStrategy %+v, want the InPlaceOnly pod update policy", beta.Spec.UpdateStrategy)
	}
	if _, err := kc.AppsV1beta1().SidecarSets().Get(ctx, ss.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("reading SidecarSet %s as v1beta1: %v", ss.Name, err)
	}
	now, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || now.UID != pod.UID || now.DeletionTimestamp != nil {
		t.Errorf("the CloneSet's pod %s (uid %s) was replaced or is going: %v", pod.Name, pod.UID, err)
	}
}

// storedCloneSet is a v1alpha1 CloneSet of replicas busybox pods labelled app=name, with a
// v1alpha1-only update strategy type, so that a conversion that loses it shows.
func storedCloneSet(f *framework.Framework, ns, name string, replicas int32) *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{f.BusyboxContainer("main")}},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType},
		},
	}
}

// storedSidecarSet is a v1alpha1 SidecarSet selecting no pod of any test.
func storedSidecarSet(f *framework.Framework, name string) *appsv1alpha1.SidecarSet {
	return &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"kruise.e2e/selected-by": name}},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: f.Image("public/busybox:1.35")}}},
		},
	}
}
