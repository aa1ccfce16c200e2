package predownload

import (
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Settings are a workload's pre-download knobs, resolved.
type Settings struct {
	// Parallelism is how many nodes pull at once.
	Parallelism int32
	// TimeoutSeconds bounds each node's pull.
	TimeoutSeconds int32
	// MinUpdatedReady is how many updated pods must be ready before the jobs are created.
	MinUpdatedReady int
}

// SettingsOf reads the imagePreDownload* fields of ips (nil for a workload without them) and,
// for each one unset, its annotation apps.kruise.io/image-predownload-* from annotations (a
// v1beta1 CloneSet written with the annotation keeps it; the Advanced DaemonSet and StatefulSet
// of the reference read the annotations only). Unusable values fall back to the defaults.
// Percentages are shares of replicas, rounded up, and a parallelism is at least 1: the reference
// hands a percentage parallelism to the ImagePullJob as is, which its schema refuses.
func SettingsOf(ips *pub.InPlaceUpdateStrategy, annotations map[string]string, replicas int) Settings {
	if ips == nil {
		ips = &pub.InPlaceUpdateStrategy{}
	}
	annotation := func(key string) *intstr.IntOrString {
		v, ok := annotations[key]
		if !ok {
			return nil
		}
		p := intstr.Parse(v)
		return &p
	}
	scaled := func(v *intstr.IntOrString) (int, bool) {
		if v == nil {
			return 0, false
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, true)
		return min(n, 1<<31-1), err == nil && n > 0
	}
	s := Settings{Parallelism: 1, TimeoutSeconds: DefaultTimeoutSeconds}

	par := ips.ImagePreDownloadParallelism
	if par == nil {
		par = annotation(appsv1beta1.ImagePreDownloadParallelismKey)
	}
	if n, ok := scaled(par); ok {
		s.Parallelism = int32(n)
	}

	if t := ips.ImagePreDownloadTimeoutSeconds; t != nil && *t > 0 {
		s.TimeoutSeconds = *t
	} else if v, err := strconv.ParseInt(annotations[appsv1beta1.ImagePreDownloadTimeoutSecondsKey], 10, 32); t == nil && err == nil && v > 0 {
		s.TimeoutSeconds = int32(v)
	}

	if m := ips.ImagePreDownloadMinUpdatedReadyPods; m != nil && *m > 0 {
		s.MinUpdatedReady = int(*m)
	} else if n, ok := scaled(annotation(appsv1beta1.ImagePreDownloadMinUpdatedReadyPods)); m == nil && ok {
		s.MinUpdatedReady = n
	}
	return s
}
