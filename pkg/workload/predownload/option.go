package predownload

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions/apps/v1beta1"
)

// Option is what a workload controller's Config carries for image pre-download; embed it.
type Option struct {
	// PreDownloadImages (the workload's pre-download feature gate) pulls an in-place update's
	// new images ahead on the nodes of the pods still to be updated; it needs ImagePullJobs.
	PreDownloadImages bool
	ImagePullJobs     kruiseinformers.ImagePullJobInformer
}

// Jobs builds the pre-download Jobs of the workloads of kind: nil when PreDownloadImages is
// off.
func (o Option) Jobs(client kubernetes.Interface, kruiseClient versioned.Interface, kind schema.GroupVersionKind) (*Jobs, error) {
	if !o.PreDownloadImages {
		return nil, nil
	}
	if o.ImagePullJobs == nil {
		return nil, errors.New("PreDownloadImages needs ImagePullJobs")
	}
	return NewJobs(JobsConfig{Client: client, KruiseClient: kruiseClient, Jobs: o.ImagePullJobs, Kind: kind})
}
