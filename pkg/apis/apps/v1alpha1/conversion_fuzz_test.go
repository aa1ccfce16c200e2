package v1alpha1

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// FuzzPullSecretModesAnnotation converts v1alpha1 NodeImages carrying an
// arbitrary apps.kruise.io/v1beta1-pull-secret-modes annotation (which a
// user may edit) to v1beta1. Invariants: no panic; the input is not
// changed; the annotation is always dropped and the others kept; a value
// that does not parse as JSON of image name to modes is dropped as a whole
// (no mode at all); one that does gives each pull secret the mode at its
// index, extra or missing entries ignored; and converting the result back
// to v1alpha1 and again to v1beta1 gives it again.
func FuzzPullSecretModesAnnotation(f *testing.F) {
	for _, s := range []string{
		`{"img1":["","Copy"]}`,
		`{"img1":["a","b","c","d"],"img2":["x"]}`,
		`{"img1":null,"img2":[]}`,
		`{"other":["a"]}`,
		`{"img1":["a"],"img2":"x"}`,
		`{"img2":5,"img1":["a"]}`,
		`{"img1":["a",null,"c"]}`,
		`{"img1":["a"]}garbage`,
		`[]`,
		`null`,
		``,
		`{`,
		`{"img1":["` + "\xff" + `"]}`,
	} {
		f.Add(s, uint8(2), true)
		f.Add(s, uint8(0), false)
	}
	f.Fuzz(func(t *testing.T, raw string, nSecrets uint8, keepOther bool) {
		in := &NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Annotations: map[string]string{PullSecretModesAnnotation: raw}}}
		if keepOther {
			in.Annotations["keep"] = "me"
		}
		secrets := make([]ReferenceObject, int(nSecrets%5))
		for i := range secrets {
			secrets[i] = ReferenceObject{Namespace: "kruise-daemon-config", Name: string(rune('a' + i))}
		}
		in.Spec.Images = map[string]ImageSpec{
			"img1": {PullSecrets: secrets, Tags: []ImageTagSpec{{Tag: "v1"}}},
			"img2": {PullSecrets: []ReferenceObject{{Name: "z"}}, Tags: []ImageTagSpec{{Tag: "v2"}}},
			"img3": {Tags: []ImageTagSpec{{Tag: "v3"}}},
		}
		saved := in.DeepCopy()

		out := NodeImageToV1beta1(in)
		if !reflect.DeepEqual(in, saved) {
			t.Fatalf("NodeImageToV1beta1 changed its input")
		}
		if _, ok := out.Annotations[PullSecretModesAnnotation]; ok {
			t.Fatalf("the modes annotation was kept")
		}
		if keepOther != (out.Annotations["keep"] == "me") || (!keepOther && out.Annotations != nil) {
			t.Fatalf("annotations %v", out.Annotations)
		}

		var modes map[string][]string
		if json.Unmarshal([]byte(raw), &modes) != nil {
			modes = nil
		}
		for name, img := range in.Spec.Images {
			got := out.Spec.Images[name].PullSecrets
			if len(got) != len(img.PullSecrets) {
				t.Fatalf("image %q: %d pull secrets, want %d", name, len(got), len(img.PullSecrets))
			}
			for i, s := range got {
				want := ""
				if m := modes[name]; i < len(m) {
					want = m[i]
				}
				if s.Mode != want || s.Name != img.PullSecrets[i].Name || s.Namespace != img.PullSecrets[i].Namespace {
					t.Fatalf("image %q secret %d: %+v, want mode %q (annotation %q)", name, i, s, want, raw)
				}
			}
		}

		again := NodeImageToV1beta1(NodeImageFromV1beta1(out))
		if !reflect.DeepEqual(again, out) {
			a, _ := json.Marshal(out)
			b, _ := json.Marshal(again)
			t.Fatalf("v1beta1 -> v1alpha1 -> v1beta1 changed\n%s\nto\n%s", a, b)
		}
	})
}

// FuzzCloneSetConversion converts CloneSets whose strategies, label and
// pre-download annotations hold arbitrary values, both ways. Invariants: no
// panic; the input is not changed; converting there and back gives the
// input again (as JSON); and a second round trip changes nothing.
func FuzzCloneSetConversion(f *testing.F) {
	f.Add("ReCreate", "RollingUpdate", "InPlaceOnly", "2", "600", "1", "true", true)
	f.Add("OnDelete", "OnDelete", "", "30%", "0", "-1", "false", false)
	f.Add("", "", "ReCreate", "x", "007", "", "", true)
	f.Fuzz(func(t *testing.T, alphaType, betaType, policy, parallelism, timeout, minReady, exclude string, withIPS bool) {
		for _, s := range []string{alphaType, betaType, policy, parallelism, timeout, minReady, exclude} {
			if !utf8.ValidString(s) {
				t.Skip("objects reach the conversion as JSON, whose strings are UTF-8")
			}
		}
		meta := metav1.ObjectMeta{
			Name:   "c",
			Labels: map[string]string{CloneSetScalingExcludePreparingDeleteKey: exclude},
			Annotations: map[string]string{
				ImagePreDownloadParallelismKey: parallelism, ImagePreDownloadTimeoutSecondsKey: timeout,
				ImagePreDownloadMinUpdatedReadyPods: minReady,
			},
		}
		var ips *pub.InPlaceUpdateStrategy
		if withIPS {
			ips = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 3}
		}
		alpha := &CloneSet{ObjectMeta: meta, Spec: CloneSetSpec{UpdateStrategy: CloneSetUpdateStrategy{
			Type: CloneSetUpdateStrategyType(alphaType), InPlaceUpdateStrategy: ips,
		}}}
		beta := &v1beta1.CloneSet{ObjectMeta: *meta.DeepCopy(), Spec: v1beta1.CloneSetSpec{UpdateStrategy: v1beta1.CloneSetUpdateStrategy{
			Type: v1beta1.CloneSetUpdateStrategyType(betaType),
			RollingUpdate: &v1beta1.RollingUpdateCloneSetStrategy{
				PodUpdatePolicy: v1beta1.CloneSetPodUpdateStrategyType(policy), InPlaceUpdateStrategy: ips.DeepCopy(),
			},
		}}}
		checkRoundTrips(t, alpha, beta, CloneSetToV1beta1, CloneSetFromV1beta1)
	})
}

// FuzzDaemonSetConversion converts DaemonSets whose strategies and
// progressive-create-pod annotation hold arbitrary values, both ways.
// Invariants: no panic; the input is not changed; converting there and back
// gives the input again (as JSON); and a second round trip changes nothing.
func FuzzDaemonSetConversion(f *testing.F) {
	f.Add("RollingUpdate", "Surging", "Standard", "true", int32(-1), int32(-1), true)
	f.Add("OnDelete", "InPlaceIfPossible", "Surging", "false", int32(1), int32(0), false)
	f.Add("", "", "", "", int32(0), int32(2), true)
	f.Fuzz(func(t *testing.T, typ, alphaRU, betaRU, progressive string, surge, unavailable int32, partitioned bool) {
		for _, s := range []string{typ, alphaRU, betaRU, progressive} {
			if !utf8.ValidString(s) {
				t.Skip("objects reach the conversion as JSON, whose strings are UTF-8")
			}
		}
		// A negative limit stands for an unset one.
		limit := func(n int32) *intstr.IntOrString {
			if n < 0 {
				return nil
			}
			v := intstr.FromInt32(n)
			return &v
		}
		meta := metav1.ObjectMeta{Name: "d", Annotations: map[string]string{ProgressiveCreatePodAnnotation: progressive}}
		alpha := &DaemonSet{ObjectMeta: meta, Spec: DaemonSetSpec{UpdateStrategy: DaemonSetUpdateStrategy{
			Type: DaemonSetUpdateStrategyType(typ),
			RollingUpdate: &RollingUpdateDaemonSet{
				Type: DaemonSetRollingUpdateType(alphaRU), MaxSurge: limit(surge), MaxUnavailable: limit(unavailable),
			},
		}}}
		beta := &v1beta1.DaemonSet{ObjectMeta: *meta.DeepCopy(), Spec: v1beta1.DaemonSetSpec{
			UpdateStrategy: v1beta1.DaemonSetUpdateStrategy{
				Type: v1beta1.DaemonSetUpdateStrategyType(typ),
				RollingUpdate: &v1beta1.RollingUpdateDaemonSet{
					Type: v1beta1.DaemonSetRollingUpdateType(betaRU), MaxSurge: limit(surge), MaxUnavailable: limit(unavailable),
				},
			},
			ScaleStrategy: &v1beta1.DaemonSetScaleStrategy{PartitionedScaling: partitioned},
		}}
		checkRoundTrips(t, alpha, beta, DaemonSetToV1beta1, DaemonSetFromV1beta1)
	})
}

// FuzzStatefulSetConversion converts a v1alpha1 StatefulSet carrying an
// arbitrary apps.kruise.io/v1beta1-statefulset-fields annotation (which a
// user may edit) and a v1beta1 one with arbitrary v1beta1-only fields, both
// ways. Invariants: no panic; the input is not changed; converting there and
// back gives the input again (as JSON); and a second round trip changes
// nothing.
func FuzzStatefulSetConversion(f *testing.F) {
	f.Add(`{"reserveOrdinals":[1,"3-5"],"ordinals":{"start":2}}`, "2-4", int32(3), "Delete", "OnPodRollingUpdate", true)
	f.Add(`{"ordinals":{"start":2},"x":1}`, "", int32(0), "", "", false)
	f.Add(`{}`, "x", int32(-1), "Retain", "OnDelete", true)
	f.Add(`null`, "1", int32(7), "", "", false)
	f.Fuzz(func(t *testing.T, annotation, reserved string, start int32, whenDeleted, vcus string, withLifecycle bool) {
		for _, s := range []string{annotation, reserved, whenDeleted, vcus} {
			if !utf8.ValidString(s) {
				t.Skip("objects reach the conversion as JSON, whose strings are UTF-8")
			}
		}
		alpha := &StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{
			StatefulSetV1beta1FieldsAnnotation: annotation, "keep": "me",
		}}}
		beta := &v1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
		if reserved != "" {
			beta.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString(reserved), intstr.FromInt32(start)}
		}
		if start != 0 {
			beta.Spec.Ordinals = &v1beta1.StatefulSetOrdinals{Start: start}
		}
		if whenDeleted != "" {
			beta.Spec.PersistentVolumeClaimRetentionPolicy = &v1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: v1beta1.PersistentVolumeClaimRetentionPolicyType(whenDeleted),
			}
		}
		beta.Spec.VolumeClaimUpdateStrategy.Type = v1beta1.VolumeClaimUpdateStrategyType(vcus)
		if withLifecycle {
			beta.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{MarkPodNotReady: true}}
		}
		checkRoundTrips(t, alpha, beta, StatefulSetToV1beta1, StatefulSetFromV1beta1)
	})
}

// checkRoundTrips holds a kind's conversion to the fuzz targets' invariants on one object of
// each version: the input is not changed; there and back gives the input again (as JSON, the
// type meta aside); and a second round trip from v1beta1 changes nothing.
func checkRoundTrips[A, B runtime.Object](t *testing.T, alpha A, beta B, toBeta func(A) B, toAlpha func(B) A) {
	t.Helper()
	savedAlpha, savedBeta := alpha.DeepCopyObject(), beta.DeepCopyObject()
	b := toBeta(alpha)
	a := toAlpha(beta)
	if !reflect.DeepEqual(runtime.Object(alpha), savedAlpha) || !reflect.DeepEqual(runtime.Object(beta), savedBeta) {
		t.Fatalf("conversion changed its input")
	}
	backAlpha, backBeta := toAlpha(b), toBeta(a)
	backAlpha.GetObjectKind().SetGroupVersionKind(alpha.GetObjectKind().GroupVersionKind())
	backBeta.GetObjectKind().SetGroupVersionKind(beta.GetObjectKind().GroupVersionKind())
	for _, pair := range [][2]any{{alpha, backAlpha}, {beta, backBeta}} {
		x, _ := json.Marshal(pair[0])
		y, _ := json.Marshal(pair[1])
		if string(x) != string(y) {
			t.Fatalf("round trip changed\n%s\nto\n%s", x, y)
		}
	}
	again := toBeta(toAlpha(b))
	x, _ := json.Marshal(b)
	y, _ := json.Marshal(again)
	if string(x) != string(y) {
		t.Fatalf("a second round trip changed\n%s\nto\n%s", x, y)
	}
}

// FuzzSidecarSetConversion converts SidecarSets whose namespace, namespace
// selector and custom version (label and field) hold arbitrary values, both
// ways, and again with an arbitrary helper annotation (which a user may
// edit). Invariants: no panic; the input is not changed; converting there
// and back gives the input again (as JSON; with a helper annotation, but
// for that annotation); and a second round trip changes nothing.
func FuzzSidecarSetConversion(f *testing.F) {
	f.Add("team-a", "team-a", "v1", "v2", `{"namespace":"team-a"}`, true, true)
	f.Add("", "", "", "", `{"customVersion":"v1","labels":{"apps.kruise.io/sidecarset-custom-version":"v0"}}`, false, true)
	f.Add("x", "", "v1", "", `not json`, true, false)
	f.Add("", "team-b", "", "v3", `{}`, false, false)
	f.Add("", "team-b", "", "v3", `{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"team-b"}},"customVersion":"v3"}`, false, true)
	f.Fuzz(func(t *testing.T, namespace, selected, label, customVersion, kept string, withLabel, withSelector bool) {
		for _, s := range []string{namespace, selected, label, customVersion, kept} {
			if !utf8.ValidString(s) {
				t.Skip("objects reach the conversion as JSON, whose strings are UTF-8")
			}
		}
		meta := metav1.ObjectMeta{Name: "s", Labels: map[string]string{"keep": "me"}}
		if withLabel {
			meta.Labels[SidecarSetCustomVersionLabel] = label
		}
		var selector *metav1.LabelSelector
		if withSelector {
			selector = &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceNameLabel: selected}}
		}
		alpha := &SidecarSet{ObjectMeta: *meta.DeepCopy(), Spec: SidecarSetSpec{Namespace: namespace, NamespaceSelector: selector}}
		beta := &v1beta1.SidecarSet{ObjectMeta: *meta.DeepCopy(), Spec: v1beta1.SidecarSetSpec{
			NamespaceSelector: selector.DeepCopy(), CustomVersion: customVersion,
		}}
		checkRoundTrips(t, alpha, beta, SidecarSetToV1beta1, SidecarSetFromV1beta1)

		alpha.Annotations = map[string]string{SidecarSetV1beta1FieldsAnnotation: kept}
		beta.Annotations = map[string]string{SidecarSetV1alpha1FieldsAnnotation: kept}
		checkRoundTripsBut(t, alpha, beta, SidecarSetToV1beta1, SidecarSetFromV1beta1,
			SidecarSetV1beta1FieldsAnnotation, SidecarSetV1alpha1FieldsAnnotation)
	})
}

// checkRoundTripsBut is checkRoundTrips for objects that carry the helper
// annotation of their version (alphaKey on alpha, betaKey on beta), which
// conversion either uses or drops as stale, and may write anew: it is left
// out of the comparison with the input.
func checkRoundTripsBut[A, B interface {
	runtime.Object
	metav1.Object
}](t *testing.T, alpha A, beta B, toBeta func(A) B, toAlpha func(B) A, alphaKey, betaKey string) {
	t.Helper()
	savedAlpha, savedBeta := alpha.DeepCopyObject(), beta.DeepCopyObject()
	backAlpha, backBeta := toAlpha(toBeta(alpha)), toBeta(toAlpha(beta))
	if !reflect.DeepEqual(runtime.Object(alpha), savedAlpha) || !reflect.DeepEqual(runtime.Object(beta), savedBeta) {
		t.Fatalf("conversion changed its input")
	}
	without := func(o metav1.Object, key string) string {
		o = o.(runtime.Object).DeepCopyObject().(metav1.Object)
		a := o.GetAnnotations()
		delete(a, key)
		if len(a) == 0 {
			a = nil
		}
		o.SetAnnotations(a)
		o.(runtime.Object).GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		raw, _ := json.Marshal(o)
		return string(raw)
	}
	if x, y := without(alpha, alphaKey), without(backAlpha, alphaKey); x != y {
		t.Fatalf("round trip changed\n%s\nto\n%s", x, y)
	}
	if x, y := without(beta, betaKey), without(backBeta, betaKey); x != y {
		t.Fatalf("round trip changed\n%s\nto\n%s", x, y)
	}
	b := toBeta(alpha)
	x, _ := json.Marshal(b)
	y, _ := json.Marshal(toBeta(toAlpha(b)))
	if string(x) != string(y) {
		t.Fatalf("a second round trip changed\n%s\nto\n%s", x, y)
	}
}
