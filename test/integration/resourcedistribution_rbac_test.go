package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// aggregate does what kube-controller-manager's ClusterRole aggregation does (this test runs no
// controller manager): a role with an aggregationRule gets the rules of every ClusterRole its
// selectors match. Without it the built-in admin role would hold no rule and prove nothing.
func aggregate(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	role, err := kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, role.AggregationRule, "%s aggregates", name)
	var rules []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		require.NoError(t, err)
		parts, err := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		require.NoError(t, err)
		for _, p := range parts.Items {
			if p.Name != name {
				rules = append(rules, p.Rules...)
			}
		}
	}
	require.NotEmpty(t, rules)
	role.Rules = rules
	_, err = kube.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// A ResourceDistribution writes Secrets into every namespace it targets, so only a cluster
// administrator may create one: a namespace's admin (the built-in admin role, bound by a
// RoleBinding in their namespace, aggregated as in a real cluster) is refused, even with a role
// granting resourcedistributions bound in their namespace (a RoleBinding never grants a
// cluster-scoped kind), while they may still write Secrets in their own namespace.
func TestNamespaceAdminCannotCreateResourceDistribution(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	ctx := context.Background()
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	// edit aggregates into admin, view into edit: fill them first.
	for _, r := range []string{"view", "edit", "admin"} {
		aggregate(t, kube, r)
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "rd-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"resourcedistributions"},
			Verbs: []string{"create", "update", "patch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, role := range []string{"admin", "rd-writer"} {
		_, err = kube.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "team-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "team-admin"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	admin, err := kube.RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
	require.NoError(t, err)
	for _, r := range admin.Rules {
		require.NotContains(t, r.Resources, "resourcedistributions", "no aggregated role grants ResourceDistributions")
	}

	userCfg := rest.CopyConfig(c.config)
	userCfg.Impersonate = rest.ImpersonationConfig{UserName: "team-admin"}
	userKube, err := kubernetes.NewForConfig(userCfg)
	require.NoError(t, err)
	// The binding works (once the authorizer has seen it): the namespace admin writes Secrets in
	// their namespace.
	waitFor(t, "team-admin may create Secrets in team", func(ctx context.Context) (bool, error) {
		_, err := userKube.CoreV1().Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "own"}}, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})

	rd := &appsv1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: "everywhere"},
		Spec: appsv1alpha1.ResourceDistributionSpec{
			Resource: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"stringData":{"k":"v"}}`)},
			Targets:  appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true},
		},
	}
	_, err = as(t, c.config, "team-admin").AppsV1alpha1().ResourceDistributions().Create(ctx, rd, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "a namespace admin creating a ResourceDistribution: %v", err)

	// A cluster administrator may.
	_, err = c.kruise.AppsV1alpha1().ResourceDistributions().Create(ctx, rd, metav1.CreateOptions{})
	require.NoError(t, err)
}
