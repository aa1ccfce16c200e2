package revision

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekruise/kruise/test/unit/gen"
)

var (
	cloneSetKind = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
	t0           = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
)

// webOwner is the CloneSet ns/web selecting app=web.
func webOwner() Owner {
	return Owner{
		Object:   &metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "web-uid"},
		Kind:     cloneSetKind,
		Selector: labels.SelectorFromSet(labels.Set{"app": "web"}),
	}
}

// webContent is what web records for its template with image.
func webContent(t *testing.T, image string) Content {
	t.Helper()
	data, err := PatchData(webTemplate(image), "spec", "template")
	require.NoError(t, err)
	return Content{Data: data, Labels: map[string]string{"app": "web"}}
}

// stored is web's revision of image numbered number, as the API server
// holds it.
func stored(t *testing.T, image string, number int64, mods ...gen.ControllerRevisionModifier) *appsv1.ControllerRevision {
	t.Helper()
	rev := NewRevision(webOwner(), webContent(t, image), number, nil)
	base := []gen.ControllerRevisionModifier{
		gen.SetControllerRevisionUID(types.UID(rev.Name + "-uid")),
		gen.SetControllerRevisionCreationTimestamp(t0.Add(time.Duration(number) * time.Minute)),
	}
	return gen.ControllerRevisionFrom(rev, append(base, mods...)...)
}

// ownedBy makes a revision controlled by uid.
func ownedBy(uid types.UID) gen.ControllerRevisionModifier {
	ref := *metav1.NewControllerRef(&metav1.ObjectMeta{Name: "other", UID: uid}, cloneSetKind)
	return gen.SetControllerRevisionOwnerReferences(ref)
}

type fixture struct {
	client  *fake.Clientset
	history *History
}

// newFixture serves cached from the lister and both cached and apiOnly
// from the API server (apiOnly: written but not seen by the cache yet).
func newFixture(cached []*appsv1.ControllerRevision, apiOnly ...*appsv1.ControllerRevision) fixture {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	var objects []runtime.Object
	for _, rev := range cached {
		_ = indexer.Add(rev)
		objects = append(objects, rev.DeepCopy())
	}
	for _, rev := range apiOnly {
		objects = append(objects, rev.DeepCopy())
	}
	client := fake.NewClientset(objects...)
	return fixture{client: client, history: NewHistory(client, appslisters.NewControllerRevisionLister(indexer))}
}

// stored returns the API server's revisions of ns by name.
func (f fixture) stored(t *testing.T) map[string]*appsv1.ControllerRevision {
	t.Helper()
	list, err := f.client.AppsV1().ControllerRevisions("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	byName := map[string]*appsv1.ControllerRevision{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	return byName
}

// writes counts the client's create, update and delete calls.
func (f fixture) writes() int {
	return len(slices.DeleteFunc(f.client.Actions(), func(a clienttesting.Action) bool {
		return a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch"
	}))
}

func names(revs []*appsv1.ControllerRevision) []string {
	var out []string
	for _, rev := range revs {
		out = append(out, rev.Name)
	}
	return out
}
