package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// SplitImage splits "host/path:tag" into the NodeImage key "host/path" and the tag.
func SplitImage(image string) (repo, tag string) {
	i := strings.LastIndex(image, ":")
	if i < 0 || i < strings.LastIndex(image, "/") {
		return image, "latest"
	}
	return image[:i], image[i+1:]
}

// DescribeNodeImageTag summarises the spec and status of repo:tag on one NodeImage ("" when it
// has neither).
func DescribeNodeImageTag(ni *appsv1beta1.NodeImage, repo, tag string) string {
	spec, st := TagSpecOf(ni, repo, tag), TagStatusesOf(ni, repo, tag)
	if spec == nil && len(st) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "NodeImage %s:", ni.Name)
	if spec != nil {
		var owners []string
		for _, o := range spec.OwnerReferences {
			owners = append(owners, o.Namespace+"/"+o.Name)
		}
		fmt.Fprintf(&b, " spec{version=%d owners=%v imagePullPolicy=%s}", spec.Version, owners, spec.ImagePullPolicy)
	}
	for _, s := range st {
		fmt.Fprintf(&b, " status{version=%d phase=%s message=%q imageID=%s}", s.Version, s.Phase, s.Message, s.ImageID)
	}
	return b.String()
}

// TagSpecOf returns the NodeImage's spec entry for repo:tag, or nil.
func TagSpecOf(ni *appsv1beta1.NodeImage, repo, tag string) *appsv1beta1.ImageTagSpec {
	return ni.TagSpec(repo, tag)
}

// TagStatusesOf returns the NodeImage's status entries for repo:tag.
func TagStatusesOf(ni *appsv1beta1.NodeImage, repo, tag string) []appsv1beta1.ImageTagStatus {
	var out []appsv1beta1.ImageTagStatus
	for _, s := range ni.Status.ImageStatuses[repo].Tags {
		if s.Tag == tag {
			out = append(out, s)
		}
	}
	return out
}

// TagObservation is what one NodeImage event showed of one image tag.
type TagObservation struct {
	Node    string
	Deleted bool
	// Spec is the spec entry (nil: none), with the image's PullSecrets and SandboxConfig.
	Spec          *appsv1beta1.ImageTagSpec
	PullSecrets   []appsv1beta1.ReferenceObject
	SandboxConfig *appsv1beta1.SandboxConfig
	// Status is the status entry of the tag (nil: none).
	Status *appsv1beta1.ImageTagStatus
}

func (o TagObservation) String() string {
	s := o.Node + ":"
	if o.Deleted {
		return s + " deleted"
	}
	if o.Spec != nil {
		s += fmt.Sprintf(" spec{v%d owners=%d secrets=%v}", o.Spec.Version, len(o.Spec.OwnerReferences), o.PullSecrets)
	} else {
		s += " no spec"
	}
	if o.Status != nil {
		s += fmt.Sprintf(" status{v%d %s %q}", o.Status.Version, o.Status.Phase, o.Status.Message)
	}
	return s
}

// NodeImageWatch records, from a watch of every NodeImage, what each event showed of one image
// tag, and keeps the latest NodeImage of every node.
type NodeImageWatch struct {
	repo, tag string

	mu      sync.Mutex
	history []TagObservation
	latest  map[string]*appsv1beta1.NodeImage
	// onEvent, when set, is called under mu after each event with the latest NodeImages.
	onEvent func(latest map[string]*appsv1beta1.NodeImage) string
	// violations are the non-empty answers of onEvent.
	violations []string
}

// WatchNodeImageTag starts recording what NodeImages say of image; it runs until the test ends.
// It is an informer, not a bare watch: after the API server restarts (and the watch's
// resourceVersion is too old) it lists again and carries on; a re-list shows up as an event
// per NodeImage.
func WatchNodeImageTag(ctx context.Context, t testing.TB, c versioned.Interface, image string) *NodeImageWatch {
	t.Helper()
	repo, tag := SplitImage(image)
	w := &NodeImageWatch{repo: repo, tag: tag, latest: map[string]*appsv1beta1.NodeImage{}}
	observe := func(typ watch.EventType) func(obj any) {
		return func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if ni, ok := obj.(*appsv1beta1.NodeImage); ok {
				w.observe(typ, ni)
			}
		}
	}
	_, inf := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return c.AppsV1beta1().NodeImages().List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return c.AppsV1beta1().NodeImages().Watch(ctx, opts)
			},
		},
		ObjectType: &appsv1beta1.NodeImage{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    observe(watch.Added),
			UpdateFunc: func(_, obj any) { observe(watch.Modified)(obj) },
			DeleteFunc: observe(watch.Deleted),
		},
	})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(wctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		t.Fatalf("listing NodeImages: the informer did not sync")
	}
	return w
}

func (w *NodeImageWatch) observe(typ watch.EventType, ni *appsv1beta1.NodeImage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := TagObservation{Node: ni.Name, Deleted: typ == watch.Deleted}
	if o.Deleted {
		delete(w.latest, ni.Name)
	} else {
		w.latest[ni.Name] = ni.DeepCopy()
		if spec := TagSpecOf(ni, w.repo, w.tag); spec != nil {
			o.Spec = spec.DeepCopy()
			img := ni.Spec.Images[w.repo]
			o.PullSecrets = append([]appsv1beta1.ReferenceObject(nil), img.PullSecrets...)
			o.SandboxConfig = img.SandboxConfig.DeepCopy()
		}
		if st := TagStatusesOf(ni, w.repo, w.tag); len(st) > 0 {
			o.Status = st[len(st)-1].DeepCopy()
		}
	}
	w.history = append(w.history, o)
	if w.onEvent != nil {
		if v := w.onEvent(w.latest); v != "" {
			w.violations = append(w.violations, v)
		}
	}
}

// CheckEachEvent sets a check run after every later event with the latest NodeImage of every
// node; a non-empty answer is kept as a violation (see Violations).
func (w *NodeImageWatch) CheckEachEvent(check func(latest map[string]*appsv1beta1.NodeImage) string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onEvent = check
	if v := check(w.latest); v != "" {
		w.violations = append(w.violations, v)
	}
}

// Violations returns what CheckEachEvent's check reported.
func (w *NodeImageWatch) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.violations...)
}

// History returns the observations of node ("" for every node), oldest first.
func (w *NodeImageWatch) History(node string) []TagObservation {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []TagObservation
	for _, o := range w.history {
		if node == "" || o.Node == node {
			out = append(out, o)
		}
	}
	return out
}

// Latest returns a copy of the latest NodeImage of node, or nil.
func (w *NodeImageWatch) Latest(node string) *appsv1beta1.NodeImage {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ni := w.latest[node]; ni != nil {
		return ni.DeepCopy()
	}
	return nil
}

// Find returns the first observation of node that cond accepts.
func (w *NodeImageWatch) Find(node string, cond func(TagObservation) bool) (TagObservation, bool) {
	for _, o := range w.History(node) {
		if cond(o) {
			return o, true
		}
	}
	return TagObservation{}, false
}

// WaitObservation waits until an observation of node that cond accepts has been recorded.
func (w *NodeImageWatch) WaitObservation(ctx context.Context, t testing.TB, node string, timeout time.Duration, desc string,
	cond func(TagObservation) bool) TagObservation {
	t.Helper()
	var got TagObservation
	WaitFor(ctx, t, timeout, fmt.Sprintf("NodeImage %s: %s", node, desc), func(context.Context) (bool, string, error) {
		if o, ok := w.Find(node, cond); ok {
			got = o
			return true, "found", nil
		}
		return false, w.Summary(node), nil
	})
	return got
}

// Summary lists the distinct observations of node, for failure messages.
func (w *NodeImageWatch) Summary(node string) string {
	var parts []string
	last := ""
	for _, o := range w.History(node) {
		if s := o.String(); s != last {
			parts = append(parts, s)
			last = s
		}
	}
	if len(parts) == 0 {
		return "no observations of " + w.repo + ":" + w.tag
	}
	return strings.Join(parts, " -> ")
}

// SetTagStatus writes the status of repo:tag on a NodeImage, as kruise-daemon would for its node:
// phase and version (Succeeded also sets a completion time and an image ID).
func SetTagStatus(ctx context.Context, t testing.TB, c versioned.Interface, node, repo, tag string, version int64, phase appsv1beta1.ImagePullPhase) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ni, err := c.AppsV1beta1().NodeImages().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		st := appsv1beta1.ImageTagStatus{Tag: tag, Phase: phase, Version: version, StartTime: &now}
		if phase == appsv1beta1.ImagePhaseSucceeded || phase == appsv1beta1.ImagePhaseFailed {
			st.CompletionTime = &now
			st.Progress = 100
		}
		if phase == appsv1beta1.ImagePhaseSucceeded {
			st.ImageID = "sha256:" + strings.Repeat("0", 64)
		}
		if ni.Status.ImageStatuses == nil {
			ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
		}
		img := ni.Status.ImageStatuses[repo]
		var tags []appsv1beta1.ImageTagStatus
		for _, s := range img.Tags {
			if s.Tag != tag {
				tags = append(tags, s)
			}
		}
		img.Tags = append(tags, st)
		ni.Status.ImageStatuses[repo] = img
		ni.Status.Desired, ni.Status.Succeeded, ni.Status.Failed, ni.Status.Pulling, ni.Status.Waiting = 0, 0, 0, 0, 0
		for _, is := range ni.Status.ImageStatuses {
			for _, s := range is.Tags {
				ni.Status.Desired++
				switch s.Phase {
				case appsv1beta1.ImagePhaseSucceeded:
					ni.Status.Succeeded++
				case appsv1beta1.ImagePhaseFailed:
					ni.Status.Failed++
				case appsv1beta1.ImagePhasePulling:
					ni.Status.Pulling++
				default:
					ni.Status.Waiting++
				}
			}
		}
		_, err = c.AppsV1beta1().NodeImages().UpdateStatus(ctx, ni, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing status %s v%d of %s:%s on NodeImage %s: %v", phase, version, repo, tag, node, err)
	}
}

// SortedKeys returns the keys of m, sorted.
func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// UnfinishedFor lists the nodes whose NodeImage (in latest) carries repo:tag for the job uid
// without a final result (Succeeded or Failed) for the request's current version.
func UnfinishedFor(latest map[string]*appsv1beta1.NodeImage, nodes []string, repo, tag string, uid types.UID) []string {
	var out []string
	for _, n := range nodes {
		ni := latest[n]
		if ni == nil {
			continue
		}
		spec := TagSpecOf(ni, repo, tag)
		if spec == nil || !slices.ContainsFunc(spec.OwnerReferences, func(r corev1.ObjectReference) bool { return r.UID == uid }) {
			continue
		}
		finished := slices.ContainsFunc(TagStatusesOf(ni, repo, tag), func(s appsv1beta1.ImageTagStatus) bool {
			return s.Version == spec.Version && (s.Phase == appsv1beta1.ImagePhaseSucceeded || s.Phase == appsv1beta1.ImagePhaseFailed)
		})
		if !finished {
			out = append(out, n)
		}
	}
	return out
}
