package framework

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// The image pull contract, spelled out here rather than imported from the product so that a
// renamed constant shows up as a failing test.
const (
	// DaemonConfigNamespace is where kruise-controller keeps the copies of pull secrets.
	DaemonConfigNamespace = "kruise-daemon-config"
	// PullSecretCopyLabel marks the copies (value "true").
	PullSecretCopyLabel = "apps.kruise.io/pull-secret-copy"
	// PullSecretSourceNamespace and PullSecretSourceName say which secret a copy copies.
	PullSecretSourceNamespace = "apps.kruise.io/source-secret-namespace"
	PullSecretSourceName      = "apps.kruise.io/source-secret-name"
	// PullingImageByAnnotation is the sandbox annotation kruise-daemon adds to every pull.
	PullingImageByAnnotation = "apps.kruise.io/pulling-image-by"
	PullingImageByValue      = "kruise-daemon"
	// ImageListPullJobLabel names the ImageListPullJob on its ImagePullJobs.
	ImageListPullJobLabel = "apps.kruise.io/image-list-pull-job"
)

// Files the local cluster's components append to (env overrides for other setups).
var (
	// CRIPullRecords is the recording CRI proxy's log of PullImage calls, one JSON line each.
	CRIPullRecords = envOr("KRUISE_E2E_PULL_RECORDS", "/var/tmp/kruise-local/criproxy/pulls.jsonl")
	// CredentialProviderCalls is the test credential provider plugin's log, "<time> <image>".
	CredentialProviderCalls = envOr("KRUISE_E2E_CREDPLUGIN_LOG", "/var/tmp/kruise-local/credential-provider/log/calls.log")
)

// NodeName is the name of the cluster's one real node (env KRUISE_E2E_NODE, default vm).
func NodeName() string { return envOr("KRUISE_E2E_NODE", "vm") }

// UniqueImage returns a reference to a new image of the loopback registry under prefix (e.g.
// "public/"), with a random repository name and tag so that no node has it yet.
func (f *Framework) UniqueImage(prefix string) string {
	return f.Image(fmt.Sprintf("%se2e-%s:v-%s", prefix, rand.String(8), rand.String(5)))
}

// PushImage pushes a tiny random image (one small layer) to ref, with creds or anonymously, and
// returns its digest.
func PushImage(t testing.TB, ref string, creds *Credentials) string {
	t.Helper()
	digest, err := pushImage(ref, creds)
	if err != nil {
		t.Fatalf("pushing image %s: %v", ref, err)
	}
	return digest
}

func pushImage(ref string, creds *Credentials) (string, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	img, err := random.Image(512, 1)
	if err != nil {
		return "", err
	}
	auth := authn.Anonymous
	if creds != nil {
		auth = &authn.Basic{Username: creds.Username, Password: creds.Password}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := remote.Write(r, img, remote.WithAuth(auth), remote.WithContext(ctx)); err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// RegistryHasPrefix pushes a probe image under prefix and reports whether the registry serves
// that prefix (false when it answers 404 NAME_UNKNOWN), failing the test on other errors.
func (f *Framework) RegistryHasPrefix(t testing.TB, prefix string) bool {
	t.Helper()
	_, err := pushImage(f.Image(prefix+"e2e-probe:"+rand.String(5)), nil)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == 404 {
		return false
	}
	if err != nil {
		t.Fatalf("probing registry prefix %s: %v", prefix, err)
	}
	return true
}

// SplitImage splits "host/path:tag" into the NodeImage key "host/path" and the tag.
func SplitImage(image string) (repo, tag string) {
	i := strings.LastIndex(image, ":")
	if i < 0 || i < strings.LastIndex(image, "/") {
		return image, "latest"
	}
	return image[:i], image[i+1:]
}

// PullRecord is one PullImage call the recording CRI proxy saw.
type PullRecord struct {
	Time               time.Time         `json:"time"`
	Image              string            `json:"image"`
	SandboxLabels      map[string]string `json:"sandboxLabels"`
	SandboxAnnotations map[string]string `json:"sandboxAnnotations"`
	HasSandboxConfig   bool              `json:"hasSandboxConfig"`
	HasAuth            bool              `json:"hasAuth"`
	Error              string            `json:"error"`
	Code               string            `json:"code"`
	ImageRef           string            `json:"imageRef"`
}

func (r PullRecord) String() string {
	return fmt.Sprintf("{%s %s code=%s hasAuth=%t labels=%v annotations=%v error=%q}", r.Time.Format(time.RFC3339Nano),
		r.Image, r.Code, r.HasAuth, r.SandboxLabels, r.SandboxAnnotations, r.Error)
}

// PullRecordsFor returns the proxy's records of PullImage calls for image that arrived at or after
// since (the proxy writes a record when the call returns).
func PullRecordsFor(t testing.TB, image string, since time.Time) []PullRecord {
	t.Helper()
	file, err := os.Open(CRIPullRecords)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the CRI proxy's records: %v", err)
	}
	defer file.Close()
	var out []PullRecord
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var r PullRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a line being written
		}
		if r.Image == image && !r.Time.Before(since) {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", CRIPullRecords, err)
	}
	return out
}

// WaitPullRecord waits for a record of a PullImage call for image (arrived since) that cond
// accepts, and returns it.
func WaitPullRecord(ctx context.Context, t testing.TB, image string, since time.Time, timeout time.Duration, desc string,
	cond func(PullRecord) bool) PullRecord {
	t.Helper()
	var got PullRecord
	WaitFor(ctx, t, timeout, "CRI PullImage record for "+image+": "+desc, func(context.Context) (bool, string, error) {
		recs := PullRecordsFor(t, image, since)
		for _, r := range recs {
			if cond(r) {
				got = r
				return true, "found", nil
			}
		}
		return false, fmt.Sprintf("records %v (in %s)", recs, CRIPullRecords), nil
	})
	return got
}

// CredentialProviderCallsFor returns the lines of the credential provider plugin's log for repo.
// Like the kubelet, kruise-daemon asks the plugin about the repository to pull, without the tag.
func CredentialProviderCallsFor(t testing.TB, repo string) []string {
	t.Helper()
	raw, err := os.ReadFile(CredentialProviderCalls)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the credential provider's log: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == repo {
			out = append(out, line)
		}
	}
	return out
}

// NewImagePullJob returns a v1beta1 ImagePullJob of image on the real node only (fake nodes of
// other tests are never picked), completing (Always) with a short per-pull timeout and one retry.
func NewImagePullJob(namespace, name, image string) *appsv1beta1.ImagePullJob {
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image: image,
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				Selector:         &appsv1beta1.ImagePullJobNodeSelector{Names: []string{NodeName()}},
				PullPolicy:       &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](1)},
				CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always, ActiveDeadlineSeconds: ptr.To[int64](300)},
			},
		},
	}
}

// CreateImagePullJob creates job and returns the server's copy.
func CreateImagePullJob(ctx context.Context, t testing.TB, c versioned.Interface, job *appsv1beta1.ImagePullJob) *appsv1beta1.ImagePullJob {
	t.Helper()
	got, err := c.AppsV1beta1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ImagePullJob %s/%s: %v", job.Namespace, job.Name, err)
	}
	return got
}

// WaitImagePullJobFinished waits until the job has a completionTime and returns it.
func WaitImagePullJobFinished(ctx context.Context, t testing.TB, c versioned.Interface, namespace, name string, timeout time.Duration) *appsv1beta1.ImagePullJob {
	t.Helper()
	var got *appsv1beta1.ImagePullJob
	WaitFor(ctx, t, timeout, fmt.Sprintf("ImagePullJob %s/%s finished", namespace, name), func(ctx context.Context) (bool, string, error) {
		job, err := c.AppsV1beta1().ImagePullJobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = job
		return job.Status.CompletionTime != nil, DescribeImagePullJob(ctx, c, job), nil
	})
	return got
}

// DescribeImagePullJob summarises the job's status and what the NodeImages say of its image, for
// failure messages.
func DescribeImagePullJob(ctx context.Context, c versioned.Interface, job *appsv1beta1.ImagePullJob) string {
	s := job.Status
	completed := "<nil>"
	if s.CompletionTime != nil {
		completed = s.CompletionTime.UTC().Format(time.RFC3339)
	}
	out := fmt.Sprintf("job %s/%s image %s: desired=%d active=%d succeeded=%d failed=%d failedNodes=%v completionTime=%s message=%q",
		job.Namespace, job.Name, job.Spec.Image, s.Desired, s.Active, s.Succeeded, s.Failed, s.FailedNodes, completed, s.Message)
	list, err := c.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out + "; listing NodeImages: " + err.Error()
	}
	repo, tag := SplitImage(job.Spec.Image)
	for i := range list.Items {
		if d := DescribeNodeImageTag(&list.Items[i], repo, tag); d != "" {
			out += "; " + d
		}
	}
	return out
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

// FakeNode creates a Node object without a kubelet behind it, tainted NoSchedule so that no pod
// lands there, and its NodeImage (the NodeImage controller creates them only for Ready nodes);
// both are deleted when the test ends.
func (f *Framework) FakeNode(ctx context.Context, t testing.TB, c versioned.Interface, name string, labels map[string]string) {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: "kruise.e2e/fake-node", Value: "true", Effect: corev1.TaintEffectNoSchedule,
		}}},
	}
	created, err := f.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating fake node %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting fake node %s: %v", name, err)
		}
		err := c.AppsV1beta1().NodeImages().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting NodeImage %s: %v", name, err)
		}
		f.deletePodsPinnedTo(ctx, t, name)
	})
	ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: created.UID}},
	}}
	if _, err := c.AppsV1beta1().NodeImages().Create(ctx, ni, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating NodeImage %s: %v", name, err)
	}
}

// deletePodsPinnedTo deletes the never-scheduled pods the DaemonSet controller made for a fake
// node (kruise-daemon tolerates every taint); it is slow to remove them once the node is gone.
func (f *Framework) deletePodsPinnedTo(ctx context.Context, t testing.TB, node string) {
	pods, err := f.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
	if err != nil {
		t.Logf("listing pods left for fake node %s: %v", node, err)
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		a := p.Spec.Affinity
		if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			continue
		}
		pinned := false
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, m := range term.MatchFields {
				if m.Key == "metadata.name" && len(m.Values) == 1 && m.Values[0] == node {
					pinned = true
				}
			}
		}
		if !pinned {
			continue
		}
		err := f.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting pod %s/%s pinned to fake node %s: %v", p.Namespace, p.Name, node, err)
		}
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
