package predownload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestSettingsOf(t *testing.T) {
	cases := []struct {
		name        string
		ips         *pub.InPlaceUpdateStrategy
		annotations map[string]string
		want        Settings
	}{
		{name: "defaults", want: Settings{Parallelism: 1, TimeoutSeconds: 300}},
		{name: "fields", ips: &pub.InPlaceUpdateStrategy{ImagePreDownloadParallelism: ptr.To(intstr.FromInt32(4)),
			ImagePreDownloadTimeoutSeconds: ptr.To[int32](30), ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](2)},
			want: Settings{Parallelism: 4, TimeoutSeconds: 30, MinUpdatedReady: 2}},
		{name: "a percentage is a share of replicas, rounded up", ips: &pub.InPlaceUpdateStrategy{ImagePreDownloadParallelism: ptr.To(intstr.FromString("45%"))},
			want: Settings{Parallelism: 5, TimeoutSeconds: 300}},
		{name: "zero parallelism would never pull", ips: &pub.InPlaceUpdateStrategy{ImagePreDownloadParallelism: ptr.To(intstr.FromInt32(0))},
			want: Settings{Parallelism: 1, TimeoutSeconds: 300}},
		{name: "annotations when the fields are unset", annotations: map[string]string{appsv1beta1.ImagePreDownloadParallelismKey: "2",
			appsv1beta1.ImagePreDownloadTimeoutSecondsKey: "45", appsv1beta1.ImagePreDownloadMinUpdatedReadyPods: "1"},
			want: Settings{Parallelism: 2, TimeoutSeconds: 45, MinUpdatedReady: 1}},
		{name: "percentage annotations", annotations: map[string]string{appsv1beta1.ImagePreDownloadParallelismKey: "50%",
			appsv1beta1.ImagePreDownloadMinUpdatedReadyPods: "25%"}, want: Settings{Parallelism: 5, TimeoutSeconds: 300, MinUpdatedReady: 3}},
		{name: "the field wins over the annotation", ips: &pub.InPlaceUpdateStrategy{ImagePreDownloadTimeoutSeconds: ptr.To[int32](10)},
			annotations: map[string]string{appsv1beta1.ImagePreDownloadTimeoutSecondsKey: "45"}, want: Settings{Parallelism: 1, TimeoutSeconds: 10}},
		{name: "bad annotations", annotations: map[string]string{appsv1beta1.ImagePreDownloadParallelismKey: "lots",
			appsv1beta1.ImagePreDownloadTimeoutSecondsKey: "-1", appsv1beta1.ImagePreDownloadMinUpdatedReadyPods: "x"},
			want: Settings{Parallelism: 1, TimeoutSeconds: 300}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SettingsOf(tc.ips, tc.annotations, 10))
		})
	}
}
