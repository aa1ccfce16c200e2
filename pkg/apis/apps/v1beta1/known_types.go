package v1beta1

import "k8s.io/apimachinery/pkg/runtime"

func knownTypes() []runtime.Object {
	return []runtime.Object{
		&ImagePullJob{}, &ImagePullJobList{},
		&ImageListPullJob{}, &ImageListPullJobList{},
		&NodeImage{}, &NodeImageList{},
	}
}

// DaemonConfigNamespace holds kruise-controller's copies of the pull secrets
// that ImagePullJobs reference, the only secrets kruise-daemon may read. It is
// OpenKruise's name for the same purpose.
const DaemonConfigNamespace = "kruise-daemon-config"
