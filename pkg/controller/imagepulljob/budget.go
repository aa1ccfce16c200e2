package imagepulljob

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Every job pulling on a node writes into that node's one NodeImage. A
// write the API server refuses (over a schema bound, or past its request
// size limit: about 1.5 MiB in etcd, 3 MiB per request) would stall every
// job on the node, so the node sync keeps the spec within a budget: the
// schema's bounds per image and tag, and a total size well under the API
// server's limit (the status, written by the daemon, grows with the spec
// and needs room too). When the requests of all jobs do not fit, they are
// taken in order (jobs already on the node first, then the oldest) and a
// request that does not fit is left out of this node; the job counts the
// node as failed (NodeImageFull, with the reason) while every other job's
// entries are written as usual. A left-out job is tried again at each sync
// of the node, so it gets in when room is made.

// DefaultNodeImageSpecBudget is the default most bytes of a NodeImage's
// spec (as JSON).
const DefaultNodeImageSpecBudget = 512 * 1024

// specOverhead is the JSON around the images of a spec: {"images":{}}.
const specOverhead = len(`{"images":{}}`)

// imageSize is the JSON size of one image entry of a spec, with its key
// and separator.
func imageSize(repo string, img *v1beta1.ImageSpec) int {
	k, _ := json.Marshal(repo) // strings and these types always marshal
	b, _ := json.Marshal(img)
	return len(k) + 1 + len(b) + 1
}

// specSize is the JSON size of spec, within a byte per image.
func specSize(spec *v1beta1.NodeImageSpec) int {
	n := specOverhead
	for repo, img := range spec.Images {
		n += imageSize(repo, &img)
	}
	return n
}

// overBudget says how spec breaks the budget, or "" when it does not.
func (c *Controller) overBudget(spec *v1beta1.NodeImageSpec) string {
	if n := len(spec.Images); n > v1beta1.MaxImagesPerNodeImage {
		return fmt.Sprintf("it would list %d images, at most %d", n, v1beta1.MaxImagesPerNodeImage)
	}
	repos := make([]string, 0, len(spec.Images))
	for repo := range spec.Images {
		repos = append(repos, repo)
	}
	sort.Strings(repos)
	for _, repo := range repos {
		img := spec.Images[repo]
		if problem := imageProblem(repo, &img); problem != "" {
			return problem
		}
	}
	if n := specSize(spec); n > c.specBudget {
		return sizeProblem(n, c.specBudget)
	}
	return ""
}

func sizeProblem(n, budget int) string {
	return fmt.Sprintf("its spec would be %d bytes, over the %d-byte budget", n, budget)
}

// imageProblem says which schema bound an image entry breaks, or "".
func imageProblem(repo string, img *v1beta1.ImageSpec) string {
	if n := len(img.Tags); n > v1beta1.MaxTagsPerImage {
		return fmt.Sprintf("image %s would have %d tags, at most %d", repo, n, v1beta1.MaxTagsPerImage)
	}
	if n := len(img.PullSecrets); n > v1beta1.MaxPullSecretsPerImage {
		return fmt.Sprintf("image %s would have %d pull secrets, at most %d", repo, n, v1beta1.MaxPullSecretsPerImage)
	}
	for _, t := range img.Tags {
		if n := len(t.OwnerReferences); n > v1beta1.MaxOwnersPerTag {
			return fmt.Sprintf("tag %s:%s would have %d owners, at most %d", repo, t.Tag, n, v1beta1.MaxOwnersPerTag)
		}
	}
	if sb := img.SandboxConfig; sb != nil {
		size := 0
		for what, m := range map[string]map[string]string{"labels": sb.Labels, "annotations": sb.Annotations} {
			if len(m) > v1beta1.MaxSandboxEntries {
				return fmt.Sprintf("image %s would have %d sandbox %s, at most %d", repo, len(m), what, v1beta1.MaxSandboxEntries)
			}
			for k, v := range m {
				kn := utf8.RuneCountInString(k)
				if kn > v1beta1.MaxSandboxKeyLength {
					return fmt.Sprintf("image %s would have a sandbox key of %d characters, at most %d", repo, kn, v1beta1.MaxSandboxKeyLength)
				}
				size += kn + utf8.RuneCountInString(v)
			}
		}
		if size > v1beta1.MaxSandboxSize {
			return fmt.Sprintf("image %s would have sandbox labels and annotations of %d characters, at most %d", repo, size, v1beta1.MaxSandboxSize)
		}
	}
	return ""
}

// admit builds the spec from base with as many of plans as fit the budget,
// taken jobs already on the node first, then oldest first; it returns the
// spec and, by job key, why each plan left out did not fit. Only the image
// a plan asks for changes when it is added, so each trial composes and
// measures that image alone.
func (c *Controller) admit(ni *v1beta1.NodeImage, base *v1beta1.NodeImageSpec, plans []*plan, o *owners,
	pruned map[string]bool, now metav1.Time) (*v1beta1.NodeImageSpec, map[string]string) {
	order := append([]*plan(nil), plans...)
	sortPlans(order)
	present := func(p *plan) bool {
		img, ok := base.Images[p.repo]
		if !ok {
			return false
		}
		for i := range img.Tags {
			if img.Tags[i].Tag == p.tag && hasOwner(&img.Tags[i], types.UID(p.uid)) {
				return true
			}
		}
		return false
	}
	sort.SliceStable(order, func(i, j int) bool { return present(order[i]) && !present(order[j]) })

	all := map[types.UID]bool{}
	for _, p := range plans {
		all[types.UID(p.uid)] = true
	}
	// Nothing admitted yet: the spec without any planned request.
	start := compose(ni, base, nil, all, o, pruned, now, "")
	sizes := map[string]int{}
	total := specOverhead
	for repo, img := range start.Images {
		sizes[repo] = imageSize(repo, &img)
		total += sizes[repo]
	}

	admitted := map[string][]*plan{} // by repo
	refused := map[string]string{}
	for _, p := range order {
		trial := append(append([]*plan(nil), admitted[p.repo]...), p)
		out := map[types.UID]bool{}
		for uid := range all {
			out[uid] = true
		}
		for _, q := range trial {
			delete(out, types.UID(q.uid))
		}
		img, exists := compose(ni, base, trial, out, o, pruned, now, p.repo).Images[p.repo]
		size, images := 0, len(sizes)
		if exists {
			size = imageSize(p.repo, &img)
			if _, had := sizes[p.repo]; !had {
				images++
			}
		}
		problem := ""
		switch {
		case !exists:
		case images > v1beta1.MaxImagesPerNodeImage:
			problem = fmt.Sprintf("it would list %d images, at most %d", images, v1beta1.MaxImagesPerNodeImage)
		default:
			problem = imageProblem(p.repo, &img)
		}
		if n := total - sizes[p.repo] + size; problem == "" && n > c.specBudget {
			problem = sizeProblem(n, c.specBudget)
		}
		if problem != "" {
			refused[p.key] = problem
			continue
		}
		admitted[p.repo] = trial
		total += size - sizes[p.repo]
		if exists {
			sizes[p.repo] = size
		} else {
			delete(sizes, p.repo)
		}
	}

	var in []*plan
	for _, p := range plans { // by key, as the fast path adds them
		if _, out := refused[p.key]; !out {
			in = append(in, p)
		}
	}
	out := map[types.UID]bool{}
	for _, p := range plans {
		if _, no := refused[p.key]; no {
			out[types.UID(p.uid)] = true
		}
	}
	return compose(ni, base, in, out, o, pruned, now, ""), refused
}

// reportFull records a NodeImageFull Event on the job when its request
// was left out of a node it was not left out of at its previous sync.
func (c *Controller) reportFull(job *v1beta1.ImagePullJob, old *plan, e evaluation) {
	var added []string
	for n := range e.full {
		if old == nil || !old.full[n] {
			added = append(added, n)
		}
	}
	if len(added) == 0 {
		return
	}
	sort.Strings(added)
	msg := e.failures[added[0]].Message
	if len(added) > 1 {
		msg = fmt.Sprintf("%s (and %d more nodes)", msg, len(added)-1)
	}
	c.recorder.Event(job, corev1.EventTypeWarning, ReasonNodeImageFull, msg)
}
