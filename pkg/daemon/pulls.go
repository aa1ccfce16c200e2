package daemon

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/cri"
	"github.com/nodekruise/kruise/pkg/cri/credentials"
	"github.com/nodekruise/kruise/pkg/daemon/imagepull"
	"github.com/nodekruise/kruise/pkg/events"
)

// pullWatch holds what the image puller watches: this node's NodeImage
// (field selector metadata.name) and the pull-secret copies in
// kruise-daemon-config. Nothing else, and nothing cluster-wide.
type pullWatch struct {
	nodeImageFactory kruiseinformers.SharedInformerFactory
	secretFactory    informers.SharedInformerFactory
	nodeImages       cache.SharedIndexInformer
	secrets          cache.SharedIndexInformer
	puller           *imagepull.Puller
	stopRecorder     func()
}

func newPullWatch(ctx context.Context, o *Options, client kubernetes.Interface, kruiseClient versioned.Interface,
	rt cri.ImageService, metrics *imagepull.Metrics) (*pullWatch, error) {
	var plugins *credentials.Plugins
	if o.CredentialProviderConfig != "" {
		var err error
		plugins, err = credentials.LoadPlugins(o.CredentialProviderConfig, o.CredentialProviderBinDir,
			credentials.WithPluginTimeout(o.CredentialProviderTimeout))
		if err != nil {
			return nil, fmt.Errorf("loading credential providers from %s: %w", o.CredentialProviderConfig, err)
		}
	}
	nodeSelector := fields.OneTermEqualSelector("metadata.name", o.NodeName).String()
	nodeImageFactory := kruiseinformers.NewSharedInformerFactoryWithOptions(kruiseClient, 0,
		kruiseinformers.WithTransform(stripManagedFields),
		kruiseinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = nodeSelector }))
	secretFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripManagedFields),
		informers.WithNamespace(appsv1beta1.DaemonConfigNamespace))

	recorder, stopRecorder, err := events.NewRecorder(ctx, client, componentName, o.NodeName)
	if err != nil {
		return nil, err
	}
	nodeImages := nodeImageFactory.Apps().V1beta1().NodeImages()
	secrets := secretFactory.Core().V1().Secrets()
	p, err := imagepull.New(imagepull.Config{
		KruiseClient:       kruiseClient,
		NodeName:           o.NodeName,
		NodeImages:         nodeImages,
		Secrets:            secrets.Lister().Secrets(appsv1beta1.DaemonConfigNamespace),
		Images:             rt,
		Keyring:            keyring{credentials.NewResolver(plugins)},
		MaxConcurrentPulls: o.MaxConcurrentPulls,
		Metrics:            metrics,
		Recorder:           recorder,
	})
	if err != nil {
		stopRecorder()
		return nil, err
	}
	return &pullWatch{
		nodeImageFactory: nodeImageFactory, secretFactory: secretFactory,
		nodeImages: nodeImages.Informer(), secrets: secrets.Informer(),
		puller: p, stopRecorder: stopRecorder,
	}, nil
}

func (w *pullWatch) start(stop <-chan struct{}) {
	w.nodeImageFactory.Start(stop)
	w.secretFactory.Start(stop)
}

func (w *pullWatch) synced() bool { return w.nodeImages.HasSynced() && w.secrets.HasSynced() }

// shutdown waits for the informers (their stop channel must be closed) and
// flushes the Event broadcaster.
func (w *pullWatch) shutdown() {
	w.nodeImageFactory.Shutdown()
	w.secretFactory.Shutdown()
	w.stopRecorder()
}

// keyring adapts the credentials resolver to the puller's boundary.
type keyring struct{ r *credentials.Resolver }

func (k keyring) Lookup(ctx context.Context, image string, secrets []*corev1.Secret) ([]imagepull.Credential, []error) {
	found, problems := k.r.Lookup(ctx, image, secrets)
	out := make([]imagepull.Credential, 0, len(found))
	for _, c := range found {
		out = append(out, imagepull.Credential{Auth: c.Auth, Source: c.Source})
	}
	return out, problems
}
