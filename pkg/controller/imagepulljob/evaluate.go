package imagepulljob

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

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

// evaluate classifies every target node and hands free slots (parallelism)
// to waiting nodes, then (Never) to nodes whose result is due for renewal.
func (c *Controller) evaluate(job *v1beta1.ImagePullJob, repo, tag string, targets []*v1beta1.NodeImage, old *plan, start, now time.Time) evaluation {
	e := evaluation{planNodes: map[string]int64{}, needWrite: map[string]bool{},
		failures: map[string]v1beta1.NodeFailure{}, waiting: map[string]bool{}, lastMessage: map[string]string{}, full: map[string]bool{}}
	never := neverPolicy(job)
	uid := job.UID
	var pending, renew []candidate
	var nextDue time.Time
	due := func(at time.Time) {
		if nextDue.IsZero() || at.Before(nextDue) {
			nextDue = at
		}
	}
	for _, ni := range targets {
		n := ni.Name
		entry := ni.TagSpec(repo, tag)
		ours := entry != nil && hasOwner(entry, uid)
		var st *v1beta1.ImageTagStatus
		if entry != nil {
			st = findStatus(ni, repo, tag, entry.Version)
		}
		if old != nil {
			v, planned := old.nodes[n]
			if why, full := c.refusals.get(n, old.key); planned && full {
				// The node's NodeImage had no room for the request
				// (budget.go): failed while so; it stays planned, so a
				// node sync that finds room adds it.
				e.planNodes[n] = v
				e.failed++
				e.failedNodes = append(e.failedNodes, n)
				e.failures[n] = nodeFailure(n, ReasonNodeImageFull, "NodeImage "+n+" has no room for this job's request: "+why)
				e.full[n] = true
				continue
			}
			if planned && (!ours || (v != 0 && v == entry.Version)) {
				// Asked in an earlier sync, not written yet.
				e.planNodes[n] = v
				e.needWrite[n] = true
				e.active++
				e.unfinishedNodes = append(e.unfinishedNodes, n)
				continue
			}
		}
		if ours {
			e.planNodes[n] = 0
			switch {
			case st != nil && st.Phase == v1beta1.ImagePhaseSucceeded:
				e.succeeded++
				if never {
					since := c.results.since(n, repo, st, now)
					if at := since.Add(c.repull); !now.Before(at) {
						renew = append(renew, candidate{node: n, repullFrom: entry.Version, renewing: true, since: since})
					} else {
						due(at)
					}
				}
			case st != nil && st.Phase == v1beta1.ImagePhaseFailed:
				e.failed++
				e.failedNodes = append(e.failedNodes, n)
				e.failures[n] = nodeFailure(n, failureReason(st.Message), st.Message)
				if never {
					since := c.results.since(n, repo, st, now)
					if at := since.Add(c.retryFailed); !now.Before(at) {
						renew = append(renew, candidate{node: n, repullFrom: entry.Version, renewing: true, since: since})
					} else {
						due(at)
					}
				}
			default:
				e.active++
				e.unfinishedNodes = append(e.unfinishedNodes, n)
				if st != nil && st.Message != "" {
					e.lastMessage[n] = st.Message
				}
			}
			continue
		}
		// Not ours: another job's result for the same tag may do.
		if entry != nil && st != nil && (st.Phase == v1beta1.ImagePhaseSucceeded || st.Phase == v1beta1.ImagePhaseFailed) {
			// Reached since the job started, on the controller's clock
			// (results.go): the node's own dates are not comparable.
			fresh := c.results.freshSince(n, repo, st, start)
			if st.Phase == v1beta1.ImagePhaseSucceeded && (fresh || !pullsAlways(job)) {
				e.succeeded++
				if never {
					// Keep the image: own the tag too, no pull needed.
					e.planNodes[n] = 0
					e.needWrite[n] = true
				}
				continue
			}
			pending = append(pending, candidate{node: n, repullFrom: entry.Version})
			continue
		}
		pending = append(pending, candidate{node: n})
	}
	slots := parallelismOf(job, int32(len(targets))) - e.active
	sort.Slice(renew, func(i, j int) bool { return renew[i].since.Before(renew[j].since) })
	for _, cand := range append(pending, renew...) {
		if slots <= 0 {
			break
		}
		slots--
		if cand.renewing {
			// A result being renewed is a pull under way again.
			if containsNode(e.failedNodes, cand.node) {
				e.failed--
				e.failedNodes = removeNode(e.failedNodes, cand.node)
				delete(e.failures, cand.node)
			} else {
				e.succeeded--
			}
		}
		e.planNodes[cand.node] = cand.repullFrom
		e.needWrite[cand.node] = true
		e.active++
		e.unfinishedNodes = append(e.unfinishedNodes, cand.node)
	}
	for _, cand := range pending {
		if _, ok := e.planNodes[cand.node]; !ok {
			e.pending++
			e.unfinishedNodes = append(e.unfinishedNodes, cand.node)
			e.waiting[cand.node] = true
		}
	}
	if !nextDue.IsZero() {
		e.recheckAfter = max(nextDue.Sub(now), time.Second)
	}
	if len(renew) > 0 && e.recheckAfter == 0 {
		// Renewals waiting for a slot are looked at when a pull finishes
		// (its status update queues the job); this is a fallback.
		e.recheckAfter = c.retryFailed
	}
	sort.Strings(e.failedNodes)
	return e
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
