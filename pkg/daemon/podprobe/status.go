package podprobe

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// buildStatus is the status that the spec and the workers' results make:
// one entry per probe of the spec that has a result, in the spec's order,
// so entries of pods or probes that left the spec are dropped. A worker
// without a result yet (just started, after a daemon restart say) keeps
// the entry that old holds for the same pod UID and probe, so a restart
// does not take every pod's marks off until its probes have run again; its
// own counting starts from nothing.
func buildStatus(spec *appsv1alpha1.NodePodProbeSpec, old *appsv1alpha1.NodePodProbeStatus,
	results func(key) (result, bool)) appsv1alpha1.NodePodProbeStatus {
	kept := map[key]appsv1alpha1.ContainerProbeState{}
	for _, ps := range old.PodProbeStatuses {
		for _, st := range ps.ProbeStates {
			kept[key{uid: ps.UID, probe: st.Name}] = st
		}
	}
	var out appsv1alpha1.NodePodProbeStatus
	seen := map[key]bool{}
	for _, pp := range spec.PodProbes {
		entry := appsv1alpha1.PodProbeStatus{Name: pp.Name, Namespace: pp.Namespace, UID: pp.UID}
		for _, p := range pp.Probes {
			k := key{uid: pp.UID, probe: p.Name}
			if seen[k] {
				continue
			}
			seen[k] = true
			if r, ok := results(k); ok {
				entry.ProbeStates = append(entry.ProbeStates, stateOf(p.Name, r))
			} else if st, ok := kept[k]; ok {
				entry.ProbeStates = append(entry.ProbeStates, st)
			}
		}
		if len(entry.ProbeStates) > 0 {
			out.PodProbeStatuses = append(out.PodProbeStatuses, entry)
		}
	}
	return out
}

// stateOf is a result as the status shows it; times are cut to whole
// seconds, as they come back from the API server, so that what was written
// compares equal to what is read.
func stateOf(name string, r result) appsv1alpha1.ContainerProbeState {
	return appsv1alpha1.ContainerProbeState{
		Name:               name,
		State:              r.state,
		Message:            r.msg,
		LastProbeTime:      metav1.NewTime(r.probeTime).Rfc3339Copy(),
		LastTransitionTime: metav1.NewTime(r.transition).Rfc3339Copy(),
	}
}

// jobs are the spec's probes, one per (pod UID, probe name): the first of
// duplicates wins.
func jobs(spec *appsv1alpha1.NodePodProbeSpec) map[key]job {
	out := map[key]job{}
	for _, pp := range spec.PodProbes {
		if pp.UID == "" {
			continue
		}
		for _, p := range pp.Probes {
			j := job{namespace: pp.Namespace, pod: pp.Name, uid: pp.UID, ip: pp.IP, container: p.ContainerName,
				probeName: p.Name, probe: p.Probe.Probe}
			k := j.key()
			if _, dup := out[k]; dup {
				continue
			}
			out[k] = j
		}
	}
	return out
}
