package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri/credentials"
	"github.com/nodekruise/kruise/pkg/daemon/imagepull"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
)

// Events on the Node about the credential-provider config.
const (
	ReasonCredentialProviderConfigReloaded = "CredentialProviderConfigReloaded"
	ReasonInvalidCredentialProviderConfig  = "InvalidCredentialProviderConfig"
)

// buildImagePuller makes the image puller: it watches this node's NodeImage
// (field selector metadata.name) and the pull-secret copies in
// kruise-daemon-config, nothing else and nothing cluster-wide, and keeps the
// credential-provider plugins in step with their config file, if any.
func buildImagePuller(_ context.Context, e *env) (*component, error) {
	o, rec := e.opts, e.recorder
	metrics := imagepull.NewMetrics()
	if err := e.register(metrics.Collectors()...); err != nil {
		return nil, err
	}
	resolver := credentials.NewResolver(nil)
	var reloader *credentials.Reloader
	if o.CredentialProviderConfig != "" {
		providerMetrics := credentials.NewMetrics()
		if err := e.register(providerMetrics.Collectors()...); err != nil {
			return nil, err
		}
		var err error
		reloader, err = credentials.NewReloader(o.CredentialProviderConfig, o.CredentialProviderBinDir,
			credentials.WithPluginTimeout(o.CredentialProviderTimeout), credentials.WithMetrics(providerMetrics))
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
	nodeImages := kube.NewInformer(e.kruiseClient.NodeImages(), &appsv1beta1.NodeImage{},
		func(lo *metav1.ListOptions) { lo.FieldSelector = nodeSelector }, kube.StripManagedFields)
	secrets := kube.NewInformer(e.client.Secrets(appsv1beta1.DaemonConfigNamespace), &corev1.Secret{}, nil, kube.StripManagedFields)

	p, err := imagepull.New(imagepull.Config{
		KruiseClient:       e.kruiseClient,
		NodeName:           o.NodeName,
		NodeImages:         nodeImages,
		Secrets:            corelisters.NewSecretLister(secrets.GetIndexer()).Secrets(appsv1beta1.DaemonConfigNamespace),
		Images:             e.runtime,
		Keyring:            keyring{resolver},
		MaxConcurrentPulls: o.MaxConcurrentPulls,
		Metrics:            metrics,
		Recorder:           rec,
	})
	if err != nil {
		return nil, err
	}
	return &component{
		informers: []informer{{name: "nodeimages", syncer: nodeImages}, {name: "secrets", syncer: secrets}},
		run: func(ctx context.Context) error {
			klog.FromContext(ctx).Info("NodeImage informer synced; starting the image puller", "maxConcurrentPulls", o.MaxConcurrentPulls)
			if reloader == nil {
				return p.Run(ctx)
			}
			ctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { reloader.Run(ctx, clock.RealClock{}, o.CredentialProviderReloadPeriod) })
			err := p.Run(ctx)
			cancel()
			wg.Wait()
			return err
		},
	}, nil
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
