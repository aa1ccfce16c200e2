package sidecarset

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// hashes are a SidecarSet's two hashes as it is now, and how the pass resizes sidecars (nil:
// it does not).
type hashes struct {
	full, withoutImage string
	resize             *resizer
}

func hashesOf(ss *appsv1beta1.SidecarSet) (hashes, error) {
	full, err := sidecarrules.Hash(ss)
	if err != nil {
		return hashes{}, err
	}
	w, err := sidecarrules.HashWithoutImage(ss)
	if err != nil {
		return hashes{}, err
	}
	return hashes{full: full, withoutImage: w}, nil
}

// podView is what one pod is to one SidecarSet.
type podView struct {
	pod *corev1.Pod
	// updated: the pod records the SidecarSet's current hash (its upgrade may still be running).
	updated bool
	// upgradable: not updated, and only images differ (the recorded hash without images is
	// the SidecarSet's), or images and the cpu and memory of sidecars (resize), so an in-place
	// upgrade can bring it up to date.
	upgradable bool
	// resize, when set, are the sidecars' resizes the upgrade applies (resize.go).
	resize *inplace.Spec
	// upgrading says what the pod's last upgrade by this SidecarSet still waits for; "" when
	// there is none or it is done.
	upgrading string
	// ready: the pod is Ready and no upgrade by this SidecarSet is running on it.
	ready bool
	// busy says why the pod must not be upgraded now although it may be upgradable: its own
	// workload's in-place update is running, or its annotations do not parse.
	busy string
	// handingOver names the old copies of HotUpgrade sidecars not yet put back on the empty
	// image (see hotupgrade.go): while there are, the pod is not ready to the SidecarSet.
	handingOver []string
	// disrupted: the pod is unavailable by the SidecarSet's own upgrade, and counts against
	// maxUnavailable (disruption.go).
	disrupted bool
}

// viewPod reads pod against ss with hashes h. A pod ss never injected is not the SidecarSet's
// (ok false): OpenKruise counts only injected pods as matched.
func viewPod(ss *appsv1beta1.SidecarSet, h hashes, pod *corev1.Pod) (podView, bool) {
	v := podView{pod: pod}
	full, errFull := sidecarrules.UpgradeSpecs(pod, sidecarrules.HashAnnotation)
	entry, injected := full[ss.Name]
	if errFull == nil && !injected {
		return v, false
	}
	if errFull != nil {
		// The pod claims an injection we cannot read: count it, never touch it.
		v.busy = errFull.Error()
		v.ready = podstate.Ready(pod)
		return v, true
	}
	v.updated = entry.Hash == h.full
	if !v.updated {
		noImage, err := sidecarrules.UpgradeSpecs(pod, sidecarrules.HashWithoutImageAnnotation)
		if err != nil {
			v.busy = err.Error()
		} else {
			v.upgradable = noImage[ss.Name].Hash == h.withoutImage
		}
		if !v.upgradable && v.busy == "" && h.resize != nil {
			if spec, err := h.resize.plan(ss, pod, entry.ControllerRevision); err == nil {
				v.upgradable, v.resize = true, spec
			}
		}
	}
	state, err := upgradeState(pod, ss.Name)
	if err != nil {
		v.busy = err.Error()
	} else if done, waiting := inplace.StateDone(pod, state); !done {
		v.upgrading = waiting
	}
	workloadUpdating := false
	if v.busy == "" {
		if done, waiting, err := inplace.UpdateDone(pod); err != nil {
			v.busy = err.Error()
		} else if !done {
			v.busy = "its workload's in-place update: " + waiting
			workloadUpdating = true
		}
	}
	old, err := handingOver(ss, pod)
	if err != nil && v.busy == "" {
		v.busy = err.Error()
	}
	v.handingOver = old
	v.ready = podstate.Ready(pod) && v.upgrading == "" && len(old) == 0
	v.disrupted = disrupted(pod, state, v.upgrading != "" || len(old) > 0, v.updated, workloadUpdating)
	return v, true
}

func upgradeState(pod *corev1.Pod, name string) (*pub.InPlaceUpdateState, error) {
	states, err := sidecarrules.UpgradeStates(pod)
	if err != nil {
		return nil, err
	}
	return states[name], nil
}

// activePod: neither being deleted nor finished. Only these are counted and upgraded.
func activePod(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}
