package coexist

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	node     = "node-a"
	ourNS    = "kruise-system"
	ourName  = "kruise-daemon-abcde"
	ourDSUID = types.UID("ds-ours")
)

// makePod is a running pod on node with a main container, changed by mods,
// as the daemon's pod cache holds it.
func makePod(ns, name string, mods ...gen.PodModifier) *corev1.Pod {
	p := gen.Pod(name, gen.SetPodNamespace(ns), gen.SetPodUID(types.UID("uid-"+name)), gen.SetPodNodeName(node),
		gen.AddPodContainer(corev1.Container{Name: "main", Image: "busybox:1.35"}), gen.SetPodPhase(corev1.PodRunning))
	return slim(gen.PodFrom(p, mods...))
}

// slim returns p as the daemon's pod cache holds it (kube.SlimPod), so that
// the rule is tested on the fields the cache keeps.
func slim(p *corev1.Pod) *corev1.Pod {
	out, err := kube.SlimPod(p)
	if err != nil {
		panic(err)
	}
	return out.(*corev1.Pod)
}

// container makes the pod's only container name, running image (and command).
func container(name, image string, command ...string) gen.PodModifier {
	return gen.SetPodContainers(corev1.Container{Name: name, Image: image, Command: command})
}

func ownedBy(kind, name string, uid types.UID) gen.PodModifier {
	return gen.SetPodOwnerReferences(metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)})
}

var (
	terminating      = gen.SetPodDeletionTimestamp(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	openKruiseLabels = gen.AddPodLabels(map[string]string{"control-plane": "daemon"})
	kruiseLabels     = gen.AddPodLabels(map[string]string{NameLabel: NameValue, PartOfLabel: PartOfValue})
	// openKruiseChart is the daemon container of OpenKruise's Helm chart.
	openKruiseChart = container("daemon", "openkruise/kruise-manager:v1.9.0", "/kruise-daemon")
)

func ourPod() *corev1.Pod {
	return makePod(ourNS, ourName, kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", ourDSUID), container("daemon", "kruise-daemon"))
}

func TestConflicting(t *testing.T) {
	found := Self{Namespace: ourNS, Name: ourName, Found: true, OwnerUID: ourDSUID}
	notFound := Self{Namespace: ourNS, Name: ourName}
	unknown := Self{Namespace: ourNS}

	cases := []struct {
		name       string
		pod        *corev1.Pod
		self       Self
		want       bool
		wantKind   Kind
		wantReason string
	}{
		{
			name: "OpenKruise chart pod", self: found, want: true, wantKind: OpenKruise,
			pod:        makePod("kruise-system", "kruise-daemon-xyz", openKruiseLabels, openKruiseChart, ownedBy("DaemonSet", "kruise-daemon", "ds-openkruise")),
			wantReason: `OpenKruise's kruise-daemon (label control-plane=daemon, container "daemon" runs /kruise-daemon)`,
		},
		{
			name: "OpenKruise by command only", self: found, want: true, wantKind: OpenKruise,
			pod:        makePod("ops", "okd", openKruiseLabels, container("daemon", "registry.local/mirror/agent:1", "/usr/local/bin/kruise-daemon", "--v=2")),
			wantReason: `OpenKruise's kruise-daemon (label control-plane=daemon, container "daemon" runs /usr/local/bin/kruise-daemon)`,
		},
		{
			name: "OpenKruise by kruise-daemon image, registry with port and digest", self: found, want: true, wantKind: OpenKruise,
			pod:        makePod("ops", "okd", openKruiseLabels, container("d", "reg.local:5000/openkruise/kruise-daemon:v1.8.0@sha256:abc")),
			wantReason: `OpenKruise's kruise-daemon (label control-plane=daemon, container "d" uses image reg.local:5000/openkruise/kruise-daemon:v1.8.0@sha256:abc)`,
		},
		{
			name: "OpenKruise by manager image without tag", self: found, want: true, wantKind: OpenKruise,
			pod: makePod("ops", "okd", openKruiseLabels, container("d", "kruise-manager")),
		},
		{
			name: "OpenKruise pod being deleted still counts", self: found, want: true, wantKind: OpenKruise,
			pod: makePod("kruise-system", "kruise-daemon-xyz", openKruiseLabels, openKruiseChart, terminating),
		},
		{
			name: "OpenKruise pod still Pending counts", self: found, want: true, wantKind: OpenKruise,
			pod: makePod("kruise-system", "kruise-daemon-xyz", openKruiseLabels, openKruiseChart, gen.SetPodPhase(corev1.PodPending)),
		},
		{
			name: "control-plane=daemon with another image and command", self: found,
			pod: makePod("cni", "agent", openKruiseLabels, container("daemon", "calico/node:v3.27", "/usr/bin/calico-node")),
		},
		{
			name: "kruise-manager command is not the daemon", self: found,
			pod: makePod("cni", "agent", openKruiseLabels, container("daemon", "example/agent:1", "/kruise-manager")),
		},
		{
			name: "OpenKruise image without the control-plane label", self: found,
			pod: makePod("kruise-system", "kruise-controller-manager-1", openKruiseChart),
		},
		{
			name: "completed OpenKruise pod", self: found,
			pod: makePod("kruise-system", "kruise-daemon-xyz", openKruiseLabels, openKruiseChart, gen.SetPodPhase(corev1.PodSucceeded)),
		},
		{
			name: "failed OpenKruise pod", self: found,
			pod: makePod("kruise-system", "kruise-daemon-xyz", openKruiseLabels, openKruiseChart, gen.SetPodPhase(corev1.PodFailed)),
		},
		{name: "our own pod", self: found, pod: ourPod()},
		{name: "our own pod, owner unknown", self: notFound, pod: ourPod()},
		{
			// Rolling update: the old (or surged new) pod of our own
			// DaemonSet. Treating it as a conflict would make both wait for
			// each other and the update would never finish.
			name: "other pod of our DaemonSet (rolling update)", self: found,
			pod: makePod(ourNS, "kruise-daemon-old12", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", ourDSUID), terminating),
		},
		{
			name: "kruise daemon of another DaemonSet", self: found, want: true, wantKind: OtherKruise,
			pod:        makePod("kruise-2", "kruise-daemon-zzz", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", "ds-other")),
			wantReason: "a kruise-daemon of another DaemonSet (owner: DaemonSet kruise-2/kruise-daemon)",
		},
		{
			name: "bare kruise daemon pod", self: found, want: true, wantKind: OtherKruise,
			pod:        makePod("dev", "kruise-daemon-debug", kruiseLabels),
			wantReason: "a kruise-daemon of another DaemonSet (owner: no controller)",
		},
		{
			name: "our pod is bare: every other kruise daemon conflicts", self: Self{Namespace: ourNS, Name: ourName, Found: true}, want: true, wantKind: OtherKruise,
			pod: makePod(ourNS, "kruise-daemon-old12", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", ourDSUID)),
		},
		{
			name: "our pod not found: compared by name", self: notFound, want: true, wantKind: OtherKruise,
			pod:        makePod(ourNS, "kruise-daemon-old12", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", ourDSUID)),
			wantReason: "a kruise-daemon pod that is not ours (our pod kruise-system/kruise-daemon-abcde is not among this node's pods)",
		},
		{
			name: "our pod name unknown: kruise daemons are not judged", self: unknown,
			pod: makePod("kruise-2", "kruise-daemon-zzz", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", "ds-other")),
		},
		{
			name: "our pod name unknown: OpenKruise still detected", self: unknown, want: true, wantKind: OpenKruise,
			pod: makePod("kruise-system", "kruise-daemon-xyz", openKruiseLabels, openKruiseChart),
		},
		{
			// Our labels win over control-plane=daemon: a pod of our own
			// DaemonSet that also carries OpenKruise's label is still ours.
			name: "our DaemonSet with OpenKruise's label too", self: found,
			pod: makePod(ourNS, "kruise-daemon-old12", kruiseLabels, openKruiseLabels, openKruiseChart, ownedBy("DaemonSet", "kruise-daemon", ourDSUID)),
		},
		{
			name: "only one of our labels", self: found,
			pod: makePod(ourNS, "kruise-daemon-x", gen.AddPodLabels(map[string]string{NameLabel: NameValue}), ownedBy("DaemonSet", "kruise-daemon", "ds-other")),
		},
		{
			name: "completed kruise daemon of another DaemonSet", self: found,
			pod: makePod("kruise-2", "kruise-daemon-zzz", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", "ds-other"), gen.SetPodPhase(corev1.PodFailed)),
		},
		{name: "unrelated pod", self: found, pod: makePod("default", "web")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Conflicting(tc.pod, tc.self)
			assert.Equal(t, tc.want, ok)
			if !tc.want {
				return
			}
			assert.Equal(t, tc.wantKind, got.Kind)
			assert.Equal(t, tc.pod.Namespace+"/"+tc.pod.Name, got.Key())
			assert.Equal(t, tc.pod.UID, got.UID)
			if tc.wantReason != "" {
				assert.Equal(t, tc.wantReason, got.Reason)
			}
			assert.NotEmpty(t, got.Advice())
		})
	}
}

func TestFindSelf(t *testing.T) {
	pods := []*corev1.Pod{makePod("default", "web"), ourPod(), makePod("dev", ourName)}
	cases := []struct {
		name, ns, pod string
		want          Self
	}{
		{name: "found with its DaemonSet", ns: ourNS, pod: ourName, want: Self{Namespace: ourNS, Name: ourName, Found: true, OwnerUID: ourDSUID}},
		{name: "bare pod", ns: "dev", pod: ourName, want: Self{Namespace: "dev", Name: ourName, Found: true}},
		{name: "not on the node", ns: ourNS, pod: "gone", want: Self{Namespace: ourNS, Name: "gone"}},
		{name: "name unknown", ns: ourNS, want: Self{Namespace: ourNS}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, FindSelf(pods, tc.ns, tc.pod))
		})
	}
}

func TestConflictsSortedAndFiltered(t *testing.T) {
	pods := []*corev1.Pod{
		makePod("z", "okd", openKruiseLabels, openKruiseChart),
		ourPod(),
		makePod("a", "other", kruiseLabels, ownedBy("DaemonSet", "kruise-daemon", "ds-other")),
		makePod("default", "web"),
	}
	got := Conflicts(pods, FindSelf(pods, ourNS, ourName))
	keys := make([]string, 0, len(got))
	for _, c := range got {
		keys = append(keys, c.Key())
	}
	assert.Equal(t, []string{"a/other", "z/okd"}, keys)
}

func TestImageRepoBase(t *testing.T) {
	cases := map[string]string{
		"openkruise/kruise-manager:v1.9.0":                  "kruise-manager",
		"127.0.0.1:5000/openkruise/kruise-manager:v1.9.0":   "kruise-manager",
		"reg:5000/kruise-daemon":                            "kruise-daemon",
		"kruise-daemon@sha256:0123":                         "kruise-daemon",
		"docker.io/openkruise/kruise-daemon:v1@sha256:0123": "kruise-daemon",
		"busybox": "busybox",
		"":        "",
		"registry.example.com:443/team/kruise-manager-fork:v1.0": "kruise-manager-fork",
	}
	for image, want := range cases {
		assert.Equal(t, want, imageRepoBase(image), image)
	}
}

func TestIsCandidate(t *testing.T) {
	assert.True(t, IsCandidate(makePod("x", "y", openKruiseLabels), ourNS, ourName))
	assert.True(t, IsCandidate(makePod("x", "y", gen.AddPodLabels(map[string]string{NameLabel: NameValue})), ourNS, ourName))
	assert.True(t, IsCandidate(makePod(ourNS, ourName), ourNS, ourName))
	assert.False(t, IsCandidate(makePod("x", "y"), ourNS, ourName))
	assert.False(t, IsCandidate(makePod(ourNS, ""), ourNS, ""))
}
