package daemon

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corelisters "k8s.io/client-go/listers/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/cri"
	"github.com/nodekruise/kruise/pkg/cri/credentials"
	"github.com/nodekruise/kruise/pkg/daemon/imagepull"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
)

// pullWatch holds what the image puller watches: this node's NodeImage
// (field selector metadata.name) and the pull-secret copies in
// kruise-daemon-config. Nothing else, and nothing cluster-wide.
type pullWatch struct {
	*informerSet
	puller *imagepull.Puller
}

func newPullWatch(o *Options, client kube.Interface, kruiseClient kube.NodeImageGetter,
	rt cri.ImageService, metrics *imagepull.Metrics, rec recorder.EventRecorder) (*pullWatch, error) {
	var plugins *credentials.Plugins
	if o.CredentialProviderConfig != "" {
		var err error
		plugins, err = credentials.LoadPlugins(o.CredentialProviderConfig, o.CredentialProviderBinDir,
			credentials.WithPluginTimeout(o.CredentialProviderTimeout))
		if err != nil {
			return nil, fmt.Errorf("loading credential providers from %s: %w", o.CredentialProviderConfig, err)
		}
	}
	nodeSelector := fields.OneTermEqualSelector(metav1.ObjectNameField, o.NodeName).String()
	nodeImages := kube.NewInformer(kruiseClient.NodeImages(), &appsv1beta1.NodeImage{},
		func(lo *metav1.ListOptions) { lo.FieldSelector = nodeSelector }, kube.StripManagedFields)
	secrets := kube.NewInformer(client.Secrets(appsv1beta1.DaemonConfigNamespace), &corev1.Secret{}, nil, kube.StripManagedFields)

	p, err := imagepull.New(imagepull.Config{
		KruiseClient:       kruiseClient,
		NodeName:           o.NodeName,
		NodeImages:         nodeImages,
		Secrets:            corelisters.NewSecretLister(secrets.GetIndexer()).Secrets(appsv1beta1.DaemonConfigNamespace),
		Images:             rt,
		Keyring:            keyring{credentials.NewResolver(plugins)},
		MaxConcurrentPulls: o.MaxConcurrentPulls,
		Metrics:            metrics,
		Recorder:           rec,
	})
	if err != nil {
		return nil, err
	}
	return &pullWatch{informerSet: newInformerSet(nodeImages, secrets), puller: p}, nil
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

func (k keyring) HasProvider(image string) bool { return k.r.HasProvider(image) }
