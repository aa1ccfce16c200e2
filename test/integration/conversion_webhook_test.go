package integration

import (
	"encoding/pem"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/webhook/conversion"
)

// convertThroughWebhook serves kruise's /convert on a TLS server of the test's own and points
// the CRD named crd at it. The API server takes the change up asynchronously: callers wait on a
// probe of their kind.
func convertThroughWebhook(t *testing.T, c *cluster, crd string) {
	t.Helper()
	h, err := conversion.NewHandler(conversion.Options{})
	require.NoError(t, err)
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	cx := ctx(t)
	crds := c.apiext.ApiextensionsV1().CustomResourceDefinitions()
	obj, err := crds.Get(cx, crd, metav1.GetOptions{})
	require.NoError(t, err)
	url := srv.URL + conversion.Path
	obj.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	_, err = crds.Update(cx, obj, metav1.UpdateOptions{})
	require.NoError(t, err)
}
