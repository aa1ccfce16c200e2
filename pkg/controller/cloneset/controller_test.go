package cloneset

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const testNS = "default"

type fixture struct {
	t        *testing.T
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	recorder *record.FakeRecorder
	cs       *appsv1beta1.CloneSet
}

func cloneSet(replicas int32, image string, mods ...gen.CloneSetModifier) *appsv1beta1.CloneSet {
	base := []gen.CloneSetModifier{
		gen.SetCloneSetNamespace(testNS), gen.SetCloneSetUID("cs-uid"), gen.SetCloneSetGeneration(1),
		gen.SetCloneSetReplicas(replicas),
		gen.SetCloneSetSelector(map[string]string{"app": "web"}),
		gen.SetCloneSetTemplate(gen.PodTemplate(gen.AddPodLabels(map[string]string{"app": "web"}),
			gen.AddPodContainer(gen.Container("main", gen.SetContainerImage(image))))),
		gen.SetCloneSetUpdateStrategy(appsv1beta1.CloneSetUpdateStrategy{
			Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
				PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
				MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
			},
		}),
	}
	return gen.CloneSet("web", append(base, mods...)...)
}

// revisionOf is the ControllerRevision cs's template makes, as the controller names it.
func revisionOf(t *testing.T, cs *appsv1beta1.CloneSet, number int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := revision.PatchData(cs.Spec.Template, revision.TemplatePath...)
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := metav1.LabelSelectorAsSelector(cs.Spec.Selector)
	return revision.NewRevision(revision.Owner{Object: cs, Kind: controllerKind, Selector: sel},
		revision.Content{Data: data, Labels: cs.Spec.Template.Labels}, number, nil)
}

// runningPod is a ready pod of cs at revision rev, made as the controller makes them.
func runningPod(t *testing.T, cs *appsv1beta1.CloneSet, rev *appsv1.ControllerRevision, id string) *corev1.Pod {
	t.Helper()
	tmpl := &corev1.PodTemplateSpec{}
	if err := revision.DecodeData(rev.Data.Raw, tmpl, revision.TemplatePath...); err != nil {
		t.Fatal(err)
	}
	pod := NewPod(PodRecipe{Owner: *metav1.NewControllerRef(cs, controllerKind), Namespace: cs.Namespace, CloneSet: cs.Name,
		Template: tmpl, Revision: rev.Name}, id, t0.Add(-time.Hour))
	pod.UID = "uid-" + "id"
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateNormal)
	pod.Spec.NodeName = "node-a"
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue},
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Ready: true, ContainerID: "containerd://" + id,
		Image: tmpl.Spec.Containers[0].Image, ImageID: "sha-" + id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return pod
}

func newFixture(t *testing.T, cs *appsv1beta1.CloneSet, revs []*appsv1.ControllerRevision, pods ...*corev1.Pod) *fixture {
	t.Helper()
	return newFixtureWith(t, cs, revs, pods, fixtureExtras{})
}

// fixtureExtras are what some tests add to a fixture: the pre-download gate, and objects of the
// kruise client (ImagePullJobs also go to their informer).
type fixtureExtras struct {
	preDownload bool
	kruiseObjs  []runtime.Object
	// resize is Config.Resize.
	resize *inplace.ResizeSupport
	// budget is Config.Budget.
	budget budgetwait.Check
	// The gates of Config.PartitionRollback, PreparingUpdateAsUpdate and ShortHash.
	partitionRollback, preparingUpdateAsUpdate, shortHash bool
}

func newFixtureWith(t *testing.T, cs *appsv1beta1.CloneSet, revs []*appsv1.ControllerRevision, pods []*corev1.Pod, x fixtureExtras) *fixture {
	t.Helper()
	var kubeObjs []runtime.Object
	for _, p := range pods {
		kubeObjs = append(kubeObjs, p)
	}
	for _, r := range revs {
		kubeObjs = append(kubeObjs, r)
	}
	kube := fake.NewClientset(kubeObjs...)
	kruise := kruisefake.NewSimpleClientset(append([]runtime.Object{cs}, x.kruiseObjs...)...)
	inf := informers.NewSharedInformerFactory(kube, 0)
	kinf := kruiseinformers.NewSharedInformerFactory(kruise, 0)
	rec := record.NewFakeRecorder(100)
	ctrl, err := New(Config{
		Config:    ctrlbase.Config{Client: kube, KruiseClient: kruise, Recorder: rec, Clock: clocktesting.NewFakeClock(t0)},
		Option:    predownload.Option{PreDownloadImages: x.preDownload, ImagePullJobs: kinf.Apps().V1beta1().ImagePullJobs()},
		CloneSets: kinf.Apps().V1beta1().CloneSets(),
		Pods:      inf.Core().V1().Pods(),
		Claims:    inf.Core().V1().PersistentVolumeClaims(),
		Revisions: inf.Apps().V1().ControllerRevisions(),
		Resize:    x.resize,
		Budget:    x.budget,

		PartitionRollback:       x.partitionRollback,
		PreparingUpdateAsUpdate: x.preparingUpdateAsUpdate,
		ShortHash:               x.shortHash,
	})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(kinf.Apps().V1beta1().CloneSets().Informer().GetIndexer().Add(cs))
	for _, p := range pods {
		must(inf.Core().V1().Pods().Informer().GetIndexer().Add(p))
	}
	for _, r := range revs {
		must(inf.Apps().V1().ControllerRevisions().Informer().GetIndexer().Add(r))
	}
	for _, o := range x.kruiseObjs {
		if j, ok := o.(*appsv1beta1.ImagePullJob); ok {
			must(kinf.Apps().V1beta1().ImagePullJobs().Informer().GetIndexer().Add(j))
		}
	}
	kube.ClearActions()
	kruise.ClearActions()
	return &fixture{t: t, ctrl: ctrl, kube: kube, kruise: kruise, recorder: rec, cs: cs}
}

func (f *fixture) sync() {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	if _, err := f.ctrl.sync(ctx, testNS+"/"+f.cs.Name); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// actions lists the kube client's writes as "verb resource[/subresource] name".
func (f *fixture) actions() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, a)
	}
	return out
}

func (f *fixture) status() appsv1beta1.CloneSetStatus {
	f.t.Helper()
	cs, err := f.kruise.AppsV1beta1().CloneSets(testNS).Get(context.Background(), f.cs.Name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return cs.Status
}

// condition is the CloneSet's status condition of type ct as written, nil when it has none.
func (f *fixture) condition(ct appsv1beta1.CloneSetConditionType) *appsv1beta1.CloneSetCondition {
	f.t.Helper()
	st := f.status()
	for i := range st.Conditions {
		if st.Conditions[i].Type == ct {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestScaleOutCreatesPodsAndWaitsForTheCache(t *testing.T) {
	cs := cloneSet(3, "app:1")
	f := newFixture(t, cs, nil)
	f.sync()

	pods, err := f.kube.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods created, want 3", len(pods.Items))
	}
	revs, _ := f.kube.AppsV1().ControllerRevisions(testNS).List(context.Background(), metav1.ListOptions{})
	if len(revs.Items) != 1 {
		t.Fatalf("%d revisions, want 1", len(revs.Items))
	}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "web-") || len(p.Name) != len("web-")+5 {
			t.Errorf("pod name %q, want web-<5 chars>", p.Name)
		}
		if p.Labels["controller-revision-hash"] != revs.Items[0].Name || p.Labels[appsv1beta1.CloneSetInstanceID] != strings.TrimPrefix(p.Name, "web-") {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}
	if st := f.status(); st.UpdateRevision != revs.Items[0].Name || st.LabelSelector != "app=web" || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}

	// The cache has not seen the pods: a second pass creates nothing (expectations).
	f.kube.ClearActions()
	f.sync()
	for _, a := range f.actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			t.Fatalf("created a pod before the cache showed the first ones: %v", a)
		}
	}
	if got := f.ctrl.expect.Pending(testNS + "/web"); len(got) != 3 {
		t.Errorf("pending expectations %v, want the 3 creations", got)
	}
}

func TestInPlaceUpdateOnePodAtATime(t *testing.T) {
	old := cloneSet(2, "app:1")
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(2, "app:2")
	a, b := runningPod(t, cs, oldRev, "aaaaa"), runningPod(t, cs, oldRev, "bbbbb")
	f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev}, a, b)
	f.sync()

	var updated []string
	for _, act := range f.actions() {
		if u, ok := act.(k8stesting.UpdateAction); ok && act.GetResource().Resource == "pods" && act.GetSubresource() == "" {
			p := u.GetObject().(*corev1.Pod)
			if p.Spec.Containers[0].Image != "app:2" || p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateUpdating) {
				t.Errorf("pod %s updated to image %s, state %s", p.Name, p.Spec.Containers[0].Image, p.Labels[pub.LifecycleStateKey])
			}
			if _, ok := p.Annotations[pub.InPlaceUpdateStateKey]; !ok {
				t.Errorf("pod %s has no in-place update state", p.Name)
			}
			updated = append(updated, p.Name)
		}
		if act.GetVerb() == "delete" || (act.GetVerb() == "create" && act.GetResource().Resource == "pods") {
			t.Errorf("an in-place update created or deleted a pod: %v", act)
		}
	}
	if len(updated) != 1 {
		t.Fatalf("updated %v in place, want one pod (maxUnavailable 1)", updated)
	}
}

func TestReCreateMarksPodsForDeletion(t *testing.T) {
	recreate := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreateCloneSetPodUpdateStrategyType
	}
	old := cloneSet(2, "app:1", recreate)
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(2, "app:2", recreate)
	f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev}, runningPod(t, cs, oldRev, "aaaaa"), runningPod(t, cs, oldRev, "bbbbb"))
	f.sync()

	marked := 0
	for _, act := range f.actions() {
		if p, ok := act.(k8stesting.PatchAction); ok && act.GetResource().Resource == "pods" && strings.Contains(string(p.GetPatch()), appsv1beta1.SpecifiedDeleteKey) {
			marked++
		}
	}
	if marked != 1 {
		t.Errorf("%d pods marked for recreation, want 1 (maxUnavailable 1): %v", marked, f.actions())
	}
}

func TestInPlaceOnlyRefusesAnEnvChange(t *testing.T) {
	inPlaceOnly := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType
	}
	old := cloneSet(1, "app:1", inPlaceOnly)
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(1, "app:1", inPlaceOnly, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	})
	f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev}, runningPod(t, cs, oldRev, "aaaaa"))
	f.sync()

	for _, act := range f.actions() {
		if act.GetResource().Resource == "pods" {
			t.Errorf("InPlaceOnly touched a pod for a change it cannot apply: %v", act)
		}
	}
	failed := f.condition(appsv1beta1.CloneSetConditionFailedUpdate)
	if failed == nil || !strings.Contains(failed.Message, "spec.containers[main].env") {
		t.Errorf("FailedUpdate condition %+v, want it to name spec.containers[main].env", failed)
	}
}

func TestScaleInDeletesPodsAndTheirClaims(t *testing.T) {
	cs := cloneSet(1, "app:1")
	rev := revisionOf(t, cs, 1)
	a, b := runningPod(t, cs, rev, "aaaaa"), runningPod(t, cs, rev, "bbbbb")
	b.Status.Conditions[0].Status = corev1.ConditionFalse // not ready: deleted first
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, a, b)
	f.sync()

	var deleted []string
	for _, act := range f.actions() {
		if d, ok := act.(k8stesting.DeleteAction); ok && act.GetResource().Resource == "pods" {
			deleted = append(deleted, d.GetName())
		}
	}
	if len(deleted) != 1 || deleted[0] != "web-bbbbb" {
		t.Errorf("deleted %v, want [web-bbbbb] (the pod not ready)", deleted)
	}
	_ = labels.Everything()
}

func TestNewPodBecomesNormalAndReady(t *testing.T) {
	cs := cloneSet(1, "app:1")
	rev := revisionOf(t, cs, 1)
	pod := runningPod(t, cs, rev, "aaaaa")
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
	pod.Status.Conditions = pod.Status.Conditions[:1] // no InPlaceUpdateReady yet
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, pod)
	f.sync()

	// InPlaceUpdateReady=True, then PreparingNormal → Normal (scheduled, no preNormal hook) in
	// the same pass, on the pod as the status write returned it: the kubelet sees both at once.
	var markedReady, normal, normalAfterReady bool
	for _, act := range f.actions() {
		p, ok := act.(k8stesting.PatchAction)
		if !ok || act.GetResource().Resource != "pods" {
			continue
		}
		body := string(p.GetPatch())
		if act.GetSubresource() == "status" && strings.Contains(body, string(pub.InPlaceUpdateReady)) && strings.Contains(body, `"True"`) {
			markedReady = true
		}
		if act.GetSubresource() == "" && strings.Contains(body, string(pub.LifecycleStateNormal)) {
			normal, normalAfterReady = true, markedReady
		}
	}
	if !markedReady {
		t.Errorf("a new pod's InPlaceUpdateReady was not set True: %v", f.actions())
	}
	if !normal || !normalAfterReady {
		t.Errorf("the pod did not go Normal after its readiness write in the same pass (Normal %v, after %v): %v", normal, normalAfterReady, f.actions())
	}
}

func TestPartitionKeepsOldPods(t *testing.T) {
	withPartition := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
		cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(4))
	}
	old := cloneSet(4, "app:1", withPartition)
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(4, "app:2", withPartition)
	var pods []*corev1.Pod
	for _, id := range []string{"aaaaa", "bbbbb", "ccccc", "ddddd"} {
		pods = append(pods, runningPod(t, cs, oldRev, id))
	}
	f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev}, pods...)
	f.sync()

	updated := 0
	for _, act := range f.actions() {
		if act.GetVerb() == "update" && act.GetResource().Resource == "pods" && act.GetSubresource() == "" {
			updated++
		}
	}
	if updated != 2 {
		t.Errorf("%d pods updated, want 2 (4 replicas, partition 2)", updated)
	}
	if st := f.status(); st.ExpectedUpdatedReplicas != 2 {
		t.Errorf("expectedUpdatedReplicas %d, want 2", st.ExpectedUpdatedReplicas)
	}
}

func TestNoPodsForASpecTheWebhookWouldRefuse(t *testing.T) {
	for name, mod := range map[string]func(*appsv1beta1.CloneSet){
		"selector does not match the template": func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Labels = map[string]string{"app": "other"} },
		"restartPolicy Never":                  func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, cloneSet(2, "app:1", mod), nil)
			f.sync()
			for _, act := range f.actions() {
				if act.GetVerb() == "create" {
					t.Errorf("created %v for a spec it cannot run", act.GetResource())
				}
			}
			select {
			case ev := <-f.recorder.Events:
				if !strings.Contains(ev, ReasonInvalidSpec) {
					t.Errorf("event %q, want %s", ev, ReasonInvalidSpec)
				}
			default:
				t.Error("no Event says why nothing happens")
			}
		})
	}
}

// patched reports whether some patch of a pod's metadata contains s.
func patched(f *fixture, s string) bool {
	for _, act := range f.actions() {
		if p, ok := act.(k8stesting.PatchAction); ok && act.GetResource().Resource == "pods" && act.GetSubresource() == "" &&
			strings.Contains(string(p.GetPatch()), s) {
			return true
		}
	}
	return false
}

// A pod in another namespace whose controller reference names the CloneSet's UID is not the
// CloneSet's: anyone who may create pods there can write that reference. Counted, it would make
// the CloneSet delete one of its own pods (and that pod's PVCs) to get back to replicas.
func TestPodOfAnotherNamespaceIsNeverCounted(t *testing.T) {
	cs := cloneSet(1, "app:1")
	rev := revisionOf(t, cs, 1)
	mine := runningPod(t, cs, rev, "aaaaa")
	impostor := runningPod(t, cs, rev, "bbbbb")
	impostor.Namespace, impostor.UID = "tenant-b", "uid-impostor"
	f := newFixture(t, cs, []*appsv1.ControllerRevision{rev}, mine, impostor)
	f.sync()

	for _, a := range f.actions() {
		if a.GetVerb() == "delete" || a.GetVerb() == "create" {
			t.Errorf("the CloneSet acted on the pods of another namespace's claim: %s %s %s/%v", a.GetVerb(), a.GetResource().Resource, a.GetNamespace(), a)
		}
	}
	if st := f.status(); st.Replicas != 1 {
		t.Errorf("status.replicas %d, want 1: the pod of namespace tenant-b was counted", st.Replicas)
	}
}

// A template carrying keys kruise writes on pods (apps.kruise.io/specified-delete, the in-place
// update record) makes pods without them: copied, the first would have every pod deleted as soon
// as it is created, and created again, for ever.
func TestTemplateReservedKeysNeverReachPods(t *testing.T) {
	reserved := func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Labels[appsv1beta1.SpecifiedDeleteKey] = "true"
		cs.Spec.Template.Annotations = map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"x"}`, "team": "a"}
	}
	cs := cloneSet(2, "app:1", reserved)
	f := newFixture(t, cs, nil)
	f.sync()
	pods, err := f.kube.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods created, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		if _, ok := p.Labels[appsv1beta1.SpecifiedDeleteKey]; ok {
			t.Errorf("pod %s carries %s from the template", p.Name, appsv1beta1.SpecifiedDeleteKey)
		}
		if _, ok := p.Annotations[pub.InPlaceUpdateStateKey]; ok {
			t.Errorf("pod %s carries %s from the template", p.Name, pub.InPlaceUpdateStateKey)
		}
		if p.Annotations["team"] != "a" {
			t.Errorf("pod %s lost the template's own annotation: %v", p.Name, p.Annotations)
		}
	}

	// Its running pods, made as the controller makes them, are kept.
	rev := revisionOf(t, cs, 1)
	f = newFixture(t, cs, []*appsv1.ControllerRevision{rev}, runningPod(t, cs, rev, "aaaaa"), runningPod(t, cs, rev, "bbbbb"))
	f.sync()
	for _, a := range f.actions() {
		if a.GetVerb() == "delete" || (a.GetVerb() == "create" && a.GetResource().Resource == "pods") {
			t.Errorf("a pod was deleted or created for a key copied from the template: %v", a)
		}
	}
}

// When the deadline passes, the condition carries OpenKruise's message exactly and the detail
// goes to one Warning Event; a pass that finds it already exceeded sends none.
func TestProgressDeadlineConditionAndEvent(t *testing.T) {
	withDeadline := func(cs *appsv1beta1.CloneSet) { cs.Spec.ProgressDeadlineSeconds = ptr.To(int32(60)) }
	old := cloneSet(2, "app:1", withDeadline)
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(2, "app:2", withDeadline)
	newRev := revisionOf(t, cs, 2)
	const want = "CloneSet revision %s has timed out progressing"
	for _, tc := range []struct {
		name      string
		last      appsv1beta1.CloneSetCondition
		wantEvent bool
	}{
		{name: "the deadline passes", wantEvent: true, last: appsv1beta1.CloneSetCondition{
			Status: corev1.ConditionTrue, Reason: ReasonProgressing, Message: progressingMessage}},
		{name: "already exceeded", last: appsv1beta1.CloneSetCondition{
			Status: corev1.ConditionFalse, Reason: ReasonProgressDeadlineExceeded, Message: "an older message"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cs.DeepCopy()
			// Two old pods, neither ready: maxUnavailable 1 lets no update start, so nothing moves.
			var pods []*corev1.Pod
			for _, id := range []string{"aaaaa", "bbbbb"} {
				p := runningPod(t, cs, oldRev, id)
				p.Status.Conditions[0].Status = corev1.ConditionFalse
				pods = append(pods, p)
			}
			tc.last.Type = appsv1beta1.CloneSetConditionTypeProgressing
			tc.last.LastUpdateTime = metav1.NewTime(t0.Add(-61 * time.Second))
			cs.Status = appsv1beta1.CloneSetStatus{ObservedGeneration: 1, Replicas: 2, UpdateRevision: newRev.Name,
				CurrentRevision: oldRev.Name, Conditions: []appsv1beta1.CloneSetCondition{tc.last}}
			f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev, newRev}, pods...)
			f.sync()

			c := f.condition(appsv1beta1.CloneSetConditionTypeProgressing)
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonProgressDeadlineExceeded ||
				c.Message != fmt.Sprintf(want, newRev.Name) {
				t.Fatalf("Progressing %+v, want False %s %q", c, ReasonProgressDeadlineExceeded, fmt.Sprintf(want, newRev.Name))
			}
			var events []string
			for len(f.recorder.Events) > 0 {
				if ev := <-f.recorder.Events; strings.Contains(ev, ReasonProgressDeadlineExceeded) {
					events = append(events, ev)
				}
			}
			switch {
			case tc.wantEvent && (len(events) != 1 || !strings.Contains(events[0], "no pod updated, ready or available for 60s")):
				t.Errorf("events %q, want one saying no pod moved for 60s", events)
			case !tc.wantEvent && len(events) != 0:
				t.Errorf("events %q, want none while it stays exceeded", events)
			}
		})
	}
}

// A percentage partition is resolved by OpenKruise's rule: rounded up, but below 100% it keeps at
// most replicas-1, so 99% of 4 still updates one pod; with an inPlaceUpdate hook the same pods go
// to PreparingUpdate instead.
func TestPercentagePartition(t *testing.T) {
	for _, tc := range []struct {
		partition   string
		replicas    int32
		wantUpdated int
	}{
		{"99%", 4, 1},
		{"100%", 4, 0},
		{"50%", 3, 1}, // 1.5 rounds up to 2 kept
		{"0%", 4, 4},
	} {
		for _, hook := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s of %d, hook %t", tc.partition, tc.replicas, hook), func(t *testing.T) {
				mod := func(cs *appsv1beta1.CloneSet) {
					cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromString(tc.partition))
					cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("100%"))
					if hook {
						cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
					}
				}
				oldRev := revisionOf(t, cloneSet(tc.replicas, "app:1", mod), 1)
				cs := cloneSet(tc.replicas, "app:2", mod)
				var pods []*corev1.Pod
				for i := range tc.replicas {
					p := runningPod(t, cs, oldRev, fmt.Sprintf("pod%02d", i))
					p.Labels["hold"] = "true"
					pods = append(pods, p)
				}
				f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev}, pods...)
				f.sync()

				updated, preparing := 0, 0
				for _, act := range f.actions() {
					if act.GetResource().Resource != "pods" || act.GetSubresource() != "" {
						continue
					}
					if act.GetVerb() == "update" {
						updated++
					}
					if p, ok := act.(k8stesting.PatchAction); ok && strings.Contains(string(p.GetPatch()), string(pub.LifecycleStatePreparingUpdate)) {
						preparing++
					}
				}
				if got := map[bool]int{false: updated, true: preparing}[hook]; got != tc.wantUpdated {
					t.Errorf("%d pods updated, %d preparing update; want %d", updated, preparing, tc.wantUpdated)
				}
				if st := f.status(); st.ExpectedUpdatedReplicas != int32(tc.wantUpdated) {
					t.Errorf("expectedUpdatedReplicas %d, want %d", st.ExpectedUpdatedReplicas, tc.wantUpdated)
				}
			})
		}
	}
}

// `kubectl kruise rollout restart` stamps the template's kubectl.kubernetes.io/restartedAt: an
// in-place CloneSet restarts its pods' containers through the in-place engine (one pod at a time
// at maxUnavailable 1), not as a bare metadata patch: the pod leaves its Services (gate False)
// and its state marks the container for kruise-daemon to restart.
func TestRolloutRestartRestartsContainersInPlace(t *testing.T) {
	old := cloneSet(2, "app:1")
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(2, "app:1", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Annotations = map[string]string{pub.RestartedAtAnnotationKey: "2026-11-29T10:00:00Z"}
	})
	f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev}, runningPod(t, cs, oldRev, "aaaaa"), runningPod(t, cs, oldRev, "bbbbb"))
	f.sync()

	var updated []*corev1.Pod
	for _, act := range f.actions() {
		if u, ok := act.(k8stesting.UpdateAction); ok && act.GetResource().Resource == "pods" && act.GetSubresource() == "" {
			updated = append(updated, u.GetObject().(*corev1.Pod))
		}
	}
	if len(updated) != 1 {
		t.Fatalf("%d pods updated, want 1 (maxUnavailable 1)", len(updated))
	}
	pod := updated[0]
	if pod.Annotations[pub.RestartedAtAnnotationKey] != "2026-11-29T10:00:00Z" {
		t.Errorf("pod annotations %v, want the restart stamp", pod.Annotations)
	}
	if st := pod.Annotations[pub.InPlaceUpdateStateKey]; !strings.Contains(st, `"restart":true`) || !strings.Contains(st, `"updateEnvFromMetadata":true`) {
		t.Errorf("in-place state %s, want container main marked for a restart", st)
	}
	gateFalse := false
	for _, act := range f.actions() {
		if p, ok := act.(k8stesting.PatchAction); ok && act.GetSubresource() == "status" {
			gateFalse = gateFalse || (strings.Contains(string(p.GetPatch()), string(pub.InPlaceUpdateReady)) && strings.Contains(string(p.GetPatch()), `"False"`))
		}
	}
	if !gateFalse {
		t.Error("the pod keeps its InPlaceUpdateReady gate True while its containers restart")
	}
}
