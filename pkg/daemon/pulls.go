package daemon

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
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
	// reloader keeps the credential-provider plugins in step with their
	// config file; nil without one.
	reloader *credentials.Reloader
}

// Events on the Node about the credential-provider config.
const (
	ReasonCredentialProviderConfigReloaded = "CredentialProviderConfigReloaded"
	ReasonInvalidCredentialProviderConfig  = "InvalidCredentialProviderConfig"
)

func newPullWatch(o *Options, client kube.Interface, kruiseClient kube.NodeImageGetter,
	rt cri.ImageService, metrics *imagepull.Metrics, rec recorder.EventRecorder) (*pullWatch, error) {
	resolver := credentials.NewResolver(nil)
	var reloader *credentials.Reloader
	if o.CredentialProviderConfig != "" {
		var err error
		reloader, err = credentials.NewReloader(o.CredentialProviderConfig, o.CredentialProviderBinDir,
			credentials.WithPluginTimeout(o.CredentialProviderTimeout))
		if err != nil {
			return nil, fmt.Errorf("loading credential providers from %s: %w", o.CredentialProviderConfig, err)
		}
		resolver = reloader.Resolver()
		// The Events say what happened to a changed config (it is usually
		// a ConfigMap, edited far from the node).
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: o.NodeName, UID: types.UID(o.NodeName)}}
		reloader.OnReload = func(_ context.Context, providers []string) {
			rec.Eventf(node, corev1.EventTypeNormal, ReasonCredentialProviderConfigReloaded,
				"Now using the changed credential provider config %s: providers %s", o.CredentialProviderConfig, strings.Join(providers, ", "))
		}
		reloader.OnError = func(_ context.Context, err error) {
			rec.Eventf(node, corev1.EventTypeWarning, ReasonInvalidCredentialProviderConfig, "%v", err)
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
		Keyring:            keyring{resolver},
		MaxConcurrentPulls: o.MaxConcurrentPulls,
		Metrics:            metrics,
		Recorder:           rec,
	})
	if err != nil {
		return nil, err
	}
	return &pullWatch{informerSet: newInformerSet(nodeImages, secrets), puller: p, reloader: reloader}, nil
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
