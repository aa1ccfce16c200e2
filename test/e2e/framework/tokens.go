package framework

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

const (
	// DaemonServiceAccount is kruise-daemon's service account, in KruiseNamespace.
	DaemonServiceAccount = "kruise-daemon"
	// DaemonUser is the user name the API server gives kruise-daemon's service account.
	DaemonUser = "system:serviceaccount:" + KruiseNamespace + ":" + DaemonServiceAccount
	// NodeNameExtra is the key of the user info's extra under which the API server puts the node
	// a service-account token is bound to (through its pod, or directly to a Node).
	NodeNameExtra = "authentication.kubernetes.io/node-name"
	// NodeScopePolicy names the ValidatingAdmissionPolicy (and its binding) that keeps each
	// kruise-daemon to the objects of its own node (deploy/base/admission-policy.yaml).
	NodeScopePolicy = "kruise-daemon-node-scope"
)

// ServiceAccountToken mints a ten-minute token for the service account namespace/name through
// the TokenRequest API; bound, when not nil, binds it to an object (a Pod, a Secret or a Node),
// which the API server then records in the token and in the user info of its requests.
func (f *Framework) ServiceAccountToken(ctx context.Context, t testing.TB, namespace, name string, bound *authenticationv1.BoundObjectReference) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](600),
		BoundObjectRef:    bound,
	}}
	got, err := f.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for service account %s/%s (bound to %+v): %v", namespace, name, bound, err)
	}
	return got.Status.Token
}

// TokenClients talk to the cluster under test with a bearer token and nothing else: the
// kubeconfig's server and CA, without its client certificate.
type TokenClients struct {
	Config *rest.Config
	Client kubernetes.Interface
	Kruise versioned.Interface
}

// ClientsForToken returns clients that authenticate with token only.
func (f *Framework) ClientsForToken(t testing.TB, token string) *TokenClients {
	t.Helper()
	cfg := rest.AnonymousClientConfig(f.Config)
	cfg.BearerToken = token
	cfg.UserAgent = "kruise-e2e-token-client"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("creating a client for a bearer token: %v", err)
	}
	kruise, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("creating a kruise client for a bearer token: %v", err)
	}
	return &TokenClients{Config: cfg, Client: client, Kruise: kruise}
}

// WhoAmI asks the API server who c authenticates as (a SelfSubjectReview, which every
// authenticated user may create).
func WhoAmI(ctx context.Context, t testing.TB, c kubernetes.Interface) authenticationv1.UserInfo {
	t.Helper()
	got, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a SelfSubjectReview: %v", err)
	}
	return got.Status.UserInfo
}
