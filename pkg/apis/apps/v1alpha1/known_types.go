package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

func knownTypes() []runtime.Object {
	return []runtime.Object{
		&ContainerRecreateRequest{}, &ContainerRecreateRequestList{},
		&ImagePullJob{}, &ImagePullJobList{},
		&ImageListPullJob{}, &ImageListPullJobList{},
		&NodeImage{}, &NodeImageList{},
		&CloneSet{}, &CloneSetList{},
		&DaemonSet{}, &DaemonSetList{},
		&StatefulSet{}, &StatefulSetList{},
		&SidecarSet{}, &SidecarSetList{},
		&WorkloadSpread{}, &WorkloadSpreadList{},
		&BroadcastJob{}, &BroadcastJobList{},
		&AdvancedCronJob{}, &AdvancedCronJobList{},
		&EphemeralJob{}, &EphemeralJobList{},
		&PodProbeMarker{}, &PodProbeMarkerList{},
		&NodePodProbe{}, &NodePodProbeList{},
		&UnitedDeployment{}, &UnitedDeploymentList{},
		&PersistentPodState{}, &PersistentPodStateList{},
		&ResourceDistribution{}, &ResourceDistributionList{},
	}
}
