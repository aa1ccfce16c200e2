package sidecarrules

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

func sidecarSet(image string) *appsv1beta1.SidecarSet {
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "log"},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1beta1.SidecarContainer{{
				Container: corev1.Container{Name: "agent", Image: image, Command: []string{"run"}},
			}},
		},
	}
}

func TestHashTellsImageOnlyChangesApart(t *testing.T) {
	a, b := sidecarSet("agent:1"), sidecarSet("agent:2")
	ha, _ := Hash(a)
	hb, _ := Hash(b)
	if ha == hb {
		t.Errorf("Hash is the same for different images: %s", ha)
	}
	wa, _ := HashWithoutImage(a)
	wb, _ := HashWithoutImage(b)
	if wa != wb {
		t.Errorf("HashWithoutImage differs for an image-only change: %s vs %s", wa, wb)
	}
	if a.Spec.Containers[0].Image != "agent:1" {
		t.Errorf("HashWithoutImage changed its argument: image %q", a.Spec.Containers[0].Image)
	}
	c := sidecarSet("agent:1")
	c.Spec.Containers[0].Command = []string{"run", "--fast"}
	if wc, _ := HashWithoutImage(c); wc == wa {
		t.Errorf("HashWithoutImage is the same for a command change: %s", wc)
	}
}

func TestHashCountsNativeSidecarsOnly(t *testing.T) {
	base := sidecarSet("agent:1")
	h0, _ := Hash(base)

	plainInit := sidecarSet("agent:1")
	plainInit.Spec.InitContainers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "setup", Image: "setup:1"}}}
	if h, _ := Hash(plainInit); h != h0 {
		t.Errorf("a run-once init container changed the hash: %s vs %s", h, h0)
	}
	native := plainInit.DeepCopy()
	native.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	hn, _ := Hash(native)
	if hn == h0 {
		t.Errorf("a native sidecar did not change the hash")
	}
	native2 := native.DeepCopy()
	native2.Spec.InitContainers[0].Image = "setup:2"
	if h, _ := Hash(native2); h == hn {
		t.Errorf("a native sidecar's image change did not change the hash")
	}
	w1, _ := HashWithoutImage(native)
	w2, _ := HashWithoutImage(native2)
	if w1 != w2 {
		t.Errorf("a native sidecar's image change changed HashWithoutImage")
	}
}

func TestSelects(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "a", Labels: map[string]string{"app": "web"}}}
	nsA := map[string]string{corev1.LabelMetadataName: "a", "team": "x"}
	onlyB := sidecarSet("i")
	onlyB.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "b"}}
	teamX := sidecarSet("i")
	teamX.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}
	other := sidecarSet("i")
	other.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	empty := sidecarSet("i")
	empty.Spec.Selector = &metav1.LabelSelector{}
	none := sidecarSet("i")
	none.Spec.Selector = nil
	bad := sidecarSet("i")
	bad.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Nope"}}}
	for name, tc := range map[string]struct {
		ss      *appsv1beta1.SidecarSet
		want    bool
		wantErr bool
	}{
		"labels and any namespace": {ss: sidecarSet("i"), want: true},
		"another namespace":        {ss: onlyB},
		"namespace labels":         {ss: teamX, want: true},
		"other labels":             {ss: other},
		"empty selector":           {ss: empty},
		"no selector":              {ss: none},
		"bad selector":             {ss: bad, wantErr: true},
	} {
		got, err := Selects(tc.ss, pod, nsA)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: Selects = %v, %v; want %v, error %v", name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestUpgradeSpecsKeepOtherSidecarSets(t *testing.T) {
	pod := &corev1.Pod{}
	if err := SetUpgradeSpec(pod, HashAnnotation, UpgradeSpec{SidecarSetName: "a", Hash: "h1", SidecarList: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if err := SetUpgradeSpec(pod, HashAnnotation, UpgradeSpec{SidecarSetName: "b", Hash: "h2"}); err != nil {
		t.Fatal(err)
	}
	specs, err := UpgradeSpecs(pod, HashAnnotation)
	if err != nil || len(specs) != 2 || specs["a"].Hash != "h1" || specs["b"].Hash != "h2" || specs["a"].SidecarList[0] != "x" {
		t.Fatalf("UpgradeSpecs = %+v, %v", specs, err)
	}
	pod.Annotations[HashAnnotation] = "{not json"
	if _, err := UpgradeSpecs(pod, HashAnnotation); err == nil {
		t.Errorf("a malformed annotation read without an error")
	}
	pod.Annotations[InjectedListAnnotation] = "a,b, a,,c"
	if got := Injected(pod); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Errorf("Injected = %q, want [a b c]", got)
	}
}

func TestRevisionDataRoundTrip(t *testing.T) {
	ss := sidecarSet("agent:1")
	ss.Spec.Volumes = []corev1.Volume{{Name: "logs"}}
	data, err := RevisionData(ss)
	if err != nil {
		t.Fatal(err)
	}
	later := sidecarSet("agent:2")
	back, err := AtRevision(later, data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.Containers[0].Image != "agent:1" || len(back.Spec.Volumes) != 1 || back.Name != "log" {
		t.Errorf("AtRevision = %+v, want agent:1 with the logs volume", back.Spec)
	}
	if later.Spec.Containers[0].Image != "agent:2" {
		t.Errorf("AtRevision changed its argument")
	}
	if _, err := AtRevision(later, []byte(`{"spec":7}`)); err == nil {
		t.Errorf("data without a spec object read without an error")
	}
}

// OpenKruise's revisions always hold these keys, null when the SidecarSet has none; its e2e
// suite and tools read them. An older revision without the null keys stays equal.
func TestRevisionDataHoldsEveryKey(t *testing.T) {
	data, err := RevisionData(sidecarSet("agent:1"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"volumes", "containers", "initContainers", "imagePullSecrets", "patchPodMetadata"} {
		if _, ok := doc["spec"][key]; !ok {
			t.Errorf("revision data %s has no %q", data, key)
		}
	}
	older := []byte(`{"spec":{"$patch":"replace","containers":` + string(mustJSON(t, sidecarSet("agent:1").Spec.Containers)) + `}}`)
	if !revision.EqualData(data, older) {
		t.Errorf("a revision recorded without the empty keys no longer equals %s", data)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
