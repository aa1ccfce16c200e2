package imagepulljob

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Where each target node of a job stands, and which of them get a slot
// (parallelism) this sync.

// evaluation is what a job's target nodes say.
type evaluation struct {
	planNodes                 map[string]int64
	active, succeeded, failed int32
	pending                   int32
	failedNodes               []string
	unfinishedNodes           []string
	// failures records why each of failedNodes failed.
	failures map[string]v1beta1.NodeFailure
	// waiting: unfinished nodes not asked yet; lastMessage: the daemon's
	// latest message for an unfinished node (a retried attempt's error).
	waiting     map[string]bool
	lastMessage map[string]string
	// full: planned nodes whose NodeImage had no room for the request.
	full map[string]bool
	// needWrite: planned nodes whose NodeImage does not carry the request
	// (or a re-pull) yet.
	needWrite map[string]bool
	// recheckAfter: when a Never job's oldest result becomes due again.
	recheckAfter time.Duration
}

// candidate is a node that may be given a slot.
type candidate struct {
	node       string
	repullFrom int64
	renewing   bool      // a Never job's result due for renewal
	since      time.Time // when the renewed result was reached
}

// survey is evaluate's working state: the evaluation so far and the nodes
// that may yet be given a slot.
type survey struct {
	evaluation
	// unasked: nodes not asked yet; renew: (Never) results due for renewal.
	unasked, renew []candidate
	// nextDue: when the next result not yet due becomes due.
	nextDue time.Time
}

func newSurvey() *survey {
	return &survey{evaluation: evaluation{planNodes: map[string]int64{}, needWrite: map[string]bool{},
		failures: map[string]v1beta1.NodeFailure{}, waiting: map[string]bool{}, lastMessage: map[string]string{}, full: map[string]bool{}}}
}

// nodeView is what a target node's NodeImage says of the job's tag.
type nodeView struct {
	name  string
	entry *v1beta1.ImageTagSpec   // the tag's entry, nil when there is none
	ours  bool                    // entry carries the job's request
	st    *v1beta1.ImageTagStatus // entry's result, nil when there is none
}

// evaluate classifies every target node and hands free slots (parallelism)
// to waiting nodes, then (Never) to nodes whose result is due for renewal.
func (c *Controller) evaluate(job *v1beta1.ImagePullJob, repo, tag string, targets []*v1beta1.NodeImage, old *plan, start, now time.Time) evaluation {
	s := newSurvey()
	for _, ni := range targets {
		v := viewOf(ni, repo, tag, job.UID)
		switch {
		case c.alreadyPlanned(s, v, old):
		case v.ours:
			c.ownResult(s, job, v, repo, now)
		default:
			c.otherResult(s, job, v, repo, start)
		}
	}
	s.allot(parallelismOf(job, int32(len(targets))) - s.active)
	s.markWaiting()
	s.setRecheck(now, c.retryFailed)
	sort.Strings(s.failedNodes)
	return s.evaluation
}

func viewOf(ni *v1beta1.NodeImage, repo, tag string, uid types.UID) nodeView {
	v := nodeView{name: ni.Name, entry: ni.TagSpec(repo, tag)}
	v.ours = v.entry != nil && hasOwner(v.entry, uid)
	if v.entry != nil {
		v.st = findStatus(ni, repo, tag, v.entry.Version)
	}
	return v
}

// alreadyPlanned counts a node the previous plan asked and whose NodeImage
// does not show the request yet, and says whether it did.
func (c *Controller) alreadyPlanned(s *survey, v nodeView, old *plan) bool {
	if old == nil {
		return false
	}
	n := v.name
	version, planned := old.nodes[n]
	if why, full := c.refusals.get(n, old.key); planned && full {
		// The node's NodeImage had no room for the request
		// (budget.go): failed while so; it stays planned, so a
		// node sync that finds room adds it.
		s.planNodes[n] = version
		s.fail(n, nodeFailure(n, ReasonNodeImageFull, "NodeImage "+n+" has no room for this job's request: "+why))
		s.full[n] = true
		return true
	}
	if planned && (!v.ours || (version != 0 && version == v.entry.Version)) {
		// Asked in an earlier sync, not written yet.
		s.planNodes[n] = version
		s.needWrite[n] = true
		s.activate(n)
		return true
	}
	return false
}

// ownResult counts a node whose NodeImage carries the job's request, and
// (Never) queues its result for renewal when due.
func (c *Controller) ownResult(s *survey, job *v1beta1.ImagePullJob, v nodeView, repo string, now time.Time) {
	n, st := v.name, v.st
	s.planNodes[n] = 0
	switch {
	case st != nil && st.Phase == v1beta1.ImagePhaseSucceeded:
		s.succeeded++
		if neverPolicy(job) {
			s.renewWhenDue(n, v.entry.Version, c.results.since(n, repo, st, now), c.repull, now)
		}
	case st != nil && st.Phase == v1beta1.ImagePhaseFailed:
		s.fail(n, nodeFailure(n, failureReason(st.Message), st.Message))
		if neverPolicy(job) {
			s.renewWhenDue(n, v.entry.Version, c.results.since(n, repo, st, now), c.retryFailed, now)
		}
	default:
		s.activate(n)
		if st != nil && st.Message != "" {
			s.lastMessage[n] = st.Message
		}
	}
}

// otherResult counts a node whose NodeImage does not carry the job's
// request: another job's result for the same tag may do; otherwise the node
// waits for a slot.
func (c *Controller) otherResult(s *survey, job *v1beta1.ImagePullJob, v nodeView, repo string, start time.Time) {
	n, st := v.name, v.st
	if v.entry == nil || st == nil || (st.Phase != v1beta1.ImagePhaseSucceeded && st.Phase != v1beta1.ImagePhaseFailed) {
		s.unasked = append(s.unasked, candidate{node: n})
		return
	}
	// Reached since the job started, on the controller's clock
	// (results.go): the node's own dates are not comparable.
	fresh := c.results.freshSince(n, repo, st, start)
	if st.Phase == v1beta1.ImagePhaseSucceeded && (fresh || !pullsAlways(job)) {
		s.succeeded++
		if neverPolicy(job) {
			// Keep the image: own the tag too, no pull needed.
			s.planNodes[n] = 0
			s.needWrite[n] = true
		}
		return
	}
	s.unasked = append(s.unasked, candidate{node: n, repullFrom: v.entry.Version})
}

func containsNode(list []string, n string) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

func removeNode(list []string, n string) []string {
	out := list[:0]
	for _, x := range list {
		if x != n {
			out = append(out, x)
		}
	}
	return out
}

// parallelismOf is how many nodes may be active at once: an integer, an
// integer string or (accepted although the schema forbids it) a percentage
// of desired, rounded up. Default 1; an invalid value counts as 1.
func parallelismOf(job *v1beta1.ImagePullJob, desired int32) int32 {
	p := job.Spec.Parallelism
	if p == nil {
		return 1
	}
	if p.Type == intstr.Int {
		return max(p.IntVal, 0)
	}
	s := strings.TrimSpace(p.StrVal)
	if strings.HasSuffix(s, "%") {
		v, err := intstr.GetScaledValueFromIntOrPercent(p, int(desired), true)
		if err != nil || v < 0 {
			return 1
		}
		return int32(min(v, math.MaxInt32))
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 0 {
		return 1
	}
	return int32(v)
}

// pullsAlways reports whether the job pulls its image even where it is
// present. As in OpenKruise, only IfNotPresent (the default) skips a
// present image: any other value, which the schema admits as OpenKruise's
// does, pulls as Always does.
func pullsAlways(job *v1beta1.ImagePullJob) bool {
	p := job.Spec.ImagePullPolicy
	return p != "" && p != v1beta1.PullIfNotPresent
}

func neverPolicy(job *v1beta1.ImagePullJob) bool {
	return job.Spec.CompletionPolicy.Type == v1beta1.Never
}
