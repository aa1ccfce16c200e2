package v1beta1

import "k8s.io/apimachinery/pkg/runtime"

func knownTypes() []runtime.Object {
	return []runtime.Object{
		&ImagePullJob{}, &ImagePullJobList{},
		&ImageListPullJob{}, &ImageListPullJobList{},
		&NodeImage{}, &NodeImageList{},
	}
}
