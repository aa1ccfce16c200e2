// Package coexist keeps kruise-daemon from acting on a node where another
// node daemon acts on the same objects: OpenKruise's own kruise-daemon, or a
// kruise-daemon of a second DaemonSet. Two daemons on one node would both
// stop the containers of a ContainerRecreateRequest and both pull the images
// of the NodeImage, so kruise-daemon waits until it is alone and stops as
// soon as it no longer is.
//
// detect.go holds the pure rule over the pods of the node; guard.go applies
// it to the node-scoped pod informer.
package coexist

import (
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels and names that identify the daemons.
const (
	// OpenKruiseDaemonLabel and OpenKruiseDaemonValue mark the pods of
	// OpenKruise's kruise-daemon DaemonSet.
	OpenKruiseDaemonLabel = "control-plane"
	OpenKruiseDaemonValue = "daemon"
	// NameLabel and PartOfLabel (with their values) mark kruise's daemon pods.
	NameLabel   = "app.kubernetes.io/name"
	NameValue   = "kruise-daemon"
	PartOfLabel = "app.kubernetes.io/part-of"
	PartOfValue = "kruise"
	// PodNameEnv is filled from metadata.name by the downward API; with it
	// the daemon finds its own pod among the node's pods.
	PodNameEnv = "POD_NAME"
)

// openKruiseBinary is the basename of OpenKruise's daemon binary, and
// openKruiseImages the image repository basenames its installs use (the
// Helm chart runs the daemon from the manager image).
const openKruiseBinary = "kruise-daemon"

var openKruiseImages = map[string]bool{"kruise-daemon": true, "kruise-manager": true}

// Kind says which sort of daemon a conflicting pod is; the remedy differs.
type Kind int

const (
	// OpenKruise is OpenKruise's kruise-daemon.
	OpenKruise Kind = iota + 1
	// OtherKruise is a kruise-daemon of a DaemonSet other than ours.
	OtherKruise
)

// Self identifies this daemon's own pod among the node's pods.
type Self struct {
	// Namespace and Name of our pod ($POD_NAMESPACE, $POD_NAME); an empty
	// Name means unknown (not running in a pod, or an old manifest).
	Namespace, Name string
	// Found reports that our pod is in the node's pods; OwnerUID is then the
	// UID of its controller (our DaemonSet), empty for a bare pod.
	Found    bool
	OwnerUID types.UID
}

// FindSelf looks our pod up among pods.
func FindSelf(pods []*corev1.Pod, namespace, name string) Self {
	s := Self{Namespace: namespace, Name: name}
	if name == "" {
		return s
	}
	for _, p := range pods {
		if p.Namespace == namespace && p.Name == name {
			s.Found = true
			if ref := metav1.GetControllerOf(p); ref != nil {
				s.OwnerUID = ref.UID
			}
			return s
		}
	}
	return s
}

// Conflict is one pod of the node that runs another node daemon.
type Conflict struct {
	Namespace, Name string
	UID             types.UID
	Kind            Kind
	// Reason says why the pod counts as a daemon, for logs and Events.
	Reason string
}

// Key is the pod's namespace/name.
func (c Conflict) Key() string { return c.Namespace + "/" + c.Name }

// Advice says what the operator should do about the conflict.
func (c Conflict) Advice() string {
	if c.Kind == OpenKruise {
		return "uninstall OpenKruise's kruise-daemon, or turn it off (OpenKruise feature gate KruiseDaemon=false), " +
			"or keep it off this node with a nodeSelector or node affinity"
	}
	return "run one kruise DaemonSet per node: delete the other one, or keep it off this node with a nodeSelector or node affinity"
}

// Conflicts returns the pods among pods (all of this node) that run another
// node daemon, ordered by namespace/name.
func Conflicts(pods []*corev1.Pod, self Self) []Conflict {
	var out []Conflict
	for _, p := range pods {
		if c, ok := Conflicting(p, self); ok {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Conflicting reports whether pod, one of this node's pods, runs a node
// daemon other than us:
//   - a pod with kruise's labels (app.kubernetes.io/name=kruise-daemon,
//     app.kubernetes.io/part-of=kruise) whose controller is not our
//     DaemonSet; compared by pod name when our own pod is unknown, and
//     never when we do not know our pod's name (we could not tell ourselves
//     apart);
//   - otherwise, OpenKruise's daemon: label control-plane=daemon and a
//     container whose command[0] or image repository has the basename
//     kruise-daemon (or kruise-manager, for the image).
//
// Our own pod and pods that have finished (Succeeded, Failed) never
// conflict. Pods being deleted still do: their process may still act.
//
// A second pod of our own DaemonSet (the old and the new pod during a
// rolling update with maxSurge) is not a conflict. The DaemonSet controller
// removes the old pod once the new one is Ready; if each waited for the
// other, neither would become Ready and the update would never finish. The
// overlap is short and the old pod stops acting when it gets SIGTERM.
func Conflicting(pod *corev1.Pod, self Self) (Conflict, bool) {
	if pod.Namespace == self.Namespace && pod.Name == self.Name {
		return Conflict{}, false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return Conflict{}, false
	}
	c := Conflict{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	if IsKruiseDaemon(pod) {
		reason, ok := otherKruise(pod, self)
		c.Kind, c.Reason = OtherKruise, reason
		return c, ok
	}
	if reason, ok := openKruise(pod); ok {
		c.Kind, c.Reason = OpenKruise, reason
		return c, true
	}
	return Conflict{}, false
}

// IsKruiseDaemon reports whether pod carries kruise's daemon labels.
func IsKruiseDaemon(pod *corev1.Pod) bool {
	return pod.Labels[NameLabel] == NameValue && pod.Labels[PartOfLabel] == PartOfValue
}

// IsCandidate reports whether pod may matter to the rule: it carries the
// label of either daemon or is our own pod. Other pods' changes need no
// new look at the node.
func IsCandidate(pod *corev1.Pod, namespace, name string) bool {
	return pod.Labels[OpenKruiseDaemonLabel] == OpenKruiseDaemonValue || pod.Labels[NameLabel] == NameValue ||
		(name != "" && pod.Namespace == namespace && pod.Name == name)
}

func otherKruise(pod *corev1.Pod, self Self) (string, bool) {
	switch {
	case self.Name == "":
		return "", false
	case !self.Found:
		return fmt.Sprintf("a kruise-daemon pod that is not ours (our pod %s/%s is not among this node's pods)", self.Namespace, self.Name), true
	}
	ref := metav1.GetControllerOf(pod)
	if ref != nil && self.OwnerUID != "" && ref.UID == self.OwnerUID {
		return "", false
	}
	owner := "no controller"
	if ref != nil {
		owner = fmt.Sprintf("%s %s/%s", ref.Kind, pod.Namespace, ref.Name)
	}
	return fmt.Sprintf("a kruise-daemon of another DaemonSet (owner: %s)", owner), true
}

func openKruise(pod *corev1.Pod) (string, bool) {
	if pod.Labels[OpenKruiseDaemonLabel] != OpenKruiseDaemonValue {
		return "", false
	}
	for _, ctr := range pod.Spec.Containers {
		if len(ctr.Command) > 0 && path.Base(ctr.Command[0]) == openKruiseBinary {
			return fmt.Sprintf("OpenKruise's kruise-daemon (label %s=%s, container %q runs %s)",
				OpenKruiseDaemonLabel, OpenKruiseDaemonValue, ctr.Name, ctr.Command[0]), true
		}
		if openKruiseImages[imageRepoBase(ctr.Image)] {
			return fmt.Sprintf("OpenKruise's kruise-daemon (label %s=%s, container %q uses image %s)",
				OpenKruiseDaemonLabel, OpenKruiseDaemonValue, ctr.Name, ctr.Image), true
		}
	}
	return "", false
}

// imageRepoBase returns the last path element of an image reference's
// repository: "reg:5000/openkruise/kruise-manager:v1.9.0@sha256:…" gives
// "kruise-manager".
func imageRepoBase(image string) string {
	ref := image
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	slash := strings.LastIndexByte(ref, '/')
	if colon := strings.LastIndexByte(ref, ':'); colon > slash {
		ref = ref[:colon]
	}
	return ref[slash+1:]
}
