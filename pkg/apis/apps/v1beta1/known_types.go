package v1beta1

import "k8s.io/apimachinery/pkg/runtime"

func knownTypes() []runtime.Object {
	return []runtime.Object{
		&ImagePullJob{}, &ImagePullJobList{},
		&ImageListPullJob{}, &ImageListPullJobList{},
		&NodeImage{}, &NodeImageList{},
		&ContainerRecreateRequest{}, &ContainerRecreateRequestList{},
		&CloneSet{}, &CloneSetList{},
		&DaemonSet{}, &DaemonSetList{},
		&StatefulSet{}, &StatefulSetList{},
		&SidecarSet{}, &SidecarSetList{},
		&BroadcastJob{}, &BroadcastJobList{},
		&AdvancedCronJob{}, &AdvancedCronJobList{},
	}
}

// DaemonConfigNamespace holds kruise-controller's copies of the pull secrets
// that ImagePullJobs reference, the only secrets kruise-daemon may read. It is
// OpenKruise's name for the same purpose.
const DaemonConfigNamespace = "kruise-daemon-config"

// FakeNodeImageLabel marks a NodeImage that has no Node behind it on purpose
// (OpenKruise's test suites create one to stand for an extra node): with
// the label (any value) it is not deleted as an orphan.
const FakeNodeImageLabel = "apps.kruise.io/fake-nodeimage"
