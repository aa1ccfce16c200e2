package predownload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubefake "k8s.io/client-go/kubernetes/fake"

	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
)

func TestOptionJobs(t *testing.T) {
	kube, kruise := kubefake.NewClientset(), kruisefake.NewSimpleClientset()
	inf := kruiseinformers.NewSharedInformerFactory(kruise, 0).Apps().V1beta1().ImagePullJobs()

	t.Run("off builds nothing", func(t *testing.T) {
		jobs, err := Option{ImagePullJobs: inf}.Jobs(kube, kruise, daemonSetKind)
		require.NoError(t, err)
		assert.Nil(t, jobs)
	})
	t.Run("on without ImagePullJobs is refused", func(t *testing.T) {
		_, err := Option{PreDownloadImages: true}.Jobs(kube, kruise, daemonSetKind)
		assert.EqualError(t, err, "PreDownloadImages needs ImagePullJobs")
	})
	t.Run("on builds the kind's Jobs", func(t *testing.T) {
		before := len(inf.Informer().GetIndexer().GetIndexers())
		jobs, err := Option{PreDownloadImages: true, ImagePullJobs: inf}.Jobs(kube, kruise, daemonSetKind)
		require.NoError(t, err)
		require.NotNil(t, jobs)
		assert.Equal(t, daemonSetKind, jobs.kind)
		assert.Len(t, inf.Informer().GetIndexer().GetIndexers(), before+1, "the owner index is added")
	})
}
