package enhancedliveness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The budget's constants (docs/enhancedliveness.md, "The restart budget").
const (
	// DefaultMaxUnavailable is the share of a workload's pods that may be restarting or not Ready
	// at once when its pods do not say (rounded down, at least one pod).
	DefaultMaxUnavailable = "10%"
	// BackoffBase is the wait after a container's first liveness restart before the next one;
	// it doubles with each restart up to BackoffMax, as the kubelet's crash-loop back-off.
	BackoffBase = 10 * time.Second
	// BackoffMax caps the wait.
	BackoffMax = 5 * time.Minute
	// BackoffReset: a container not restarted for this long starts again from BackoffBase.
	BackoffReset = 10 * time.Minute
	// SharedOutageMinPods is the fewest failing pods that can be a shared outage: with fewer,
	// the budget (at least one pod at a time) already paces the restarts, and a small workload
	// whose only pods are sick must still be healed.
	SharedOutageMinPods = 3
)

// Reasons a failing container is not restarted now (the label of the held metric).
const (
	HeldBudget       = "Budget"
	HeldBackoff      = "Backoff"
	HeldSharedOutage = "SharedOutage"
)

// Container is one container's enhanced liveness result.
type Container struct {
	Name string
	// Failed is true when the probe's state is Failed; Since is its lastTransitionTime.
	Failed bool
	Since  time.Time
}

// Restart is what the pod's annotation records of a container's last liveness restart.
type Restart struct {
	// At is when kruise-controller asked for it.
	At time.Time `json:"at"`
	// Delay is the back-off that followed it: no new restart before At+Delay.
	Delay Seconds `json:"delaySeconds"`
}

// Seconds is a duration written as whole seconds.
type Seconds int64

// Duration is s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) * time.Second }

// Pod is one pod of the workload, as Decide reads it.
type Pod struct {
	UID  types.UID
	Name string
	// Ready is the pod's Ready condition.
	Ready bool
	// Restarting: a liveness ContainerRecreateRequest of this pod is not Completed yet.
	Restarting bool
	// Containers are the enhanced liveness results of its containers (none when unknown).
	Containers []Container
	// History is the last liveness restart of each container.
	History map[string]Restart
}

// Workload is the input of Decide: one workload's pods and its budget.
type Workload struct {
	Pods []Pod
	// MaxUnavailable is how many pods may be unavailable (not Ready, or restarting) at once.
	MaxUnavailable int
}

// Plan is one pod to restart now.
type Plan struct {
	Pod        types.UID
	Containers []string
	// Since is the newest failure among them (names the request: one per failure).
	Since time.Time
}

// Decision is what Decide returns.
type Decision struct {
	Restart []Plan
	// Held counts, per reason, the pods with a failing container not restarted now.
	Held map[string]int
	// Failing is the number of pods whose liveness probe is Failed now (answered or not);
	// SharedOutage says they are more than half of the workload's pods (and at least
	// SharedOutageMinPods): none is restarted.
	Failing      int
	SharedOutage bool
	// RequeueAfter, when positive, is when the first back-off held pod may be restarted.
	RequeueAfter time.Duration
}

// Decide says which pods of a workload to restart now. The rules:
//   - a container is due when its probe is Failed, the failure is newer than its last liveness
//     restart (the daemon resets the probe to Unknown when the container restarts, and until it
//     does a Failed state older than the restart is the one already answered), and its back-off
//     since that restart has passed;
//   - a pod already restarting (a request not Completed) is left alone;
//   - when more than half of the workload's pods have a Failed probe at once (restarted or
//     not: a pod that fails again after its restart still counts), and at least
//     SharedOutageMinPods, the cause is something they share, not the pods: none is restarted;
//   - at most MaxUnavailable pods restart at once, and a Ready pod is restarted only while the
//     pods not Ready or restarting, with it, stay within MaxUnavailable (restarting a pod that
//     is not Ready anyway costs no availability). Pods not Ready go first, then the oldest
//     failures, then by name.
func Decide(w Workload, now time.Time) Decision {
	d := Decision{Held: map[string]int{}}
	type due struct {
		pod        *Pod
		containers []string
		since      time.Time
	}
	var candidates []due
	restarting, unavailable := 0, 0
	for i := range w.Pods {
		p := &w.Pods[i]
		if p.Restarting {
			restarting++
		}
		if p.Restarting || !p.Ready {
			unavailable++
		}
		failedNow, failing, backedOff := false, false, false
		var c due
		for _, ct := range p.Containers {
			if !ct.Failed {
				continue
			}
			failedNow = true
			last, restarted := p.History[ct.Name]
			if restarted && !ct.Since.After(last.At) {
				continue // the failure the last restart answered
			}
			failing = true
			if restarted {
				if next := last.At.Add(last.Delay.Duration()); now.Before(next) {
					backedOff = true
					if wait := next.Sub(now); d.RequeueAfter == 0 || wait < d.RequeueAfter {
						d.RequeueAfter = wait
					}
					continue
				}
			}
			c.containers = append(c.containers, ct.Name)
			if ct.Since.After(c.since) {
				c.since = ct.Since
			}
		}
		if failedNow {
			d.Failing++
		}
		if !failing || p.Restarting {
			continue
		}
		if len(c.containers) == 0 {
			if backedOff {
				d.Held[HeldBackoff]++
			}
			continue
		}
		c.pod = p
		candidates = append(candidates, c)
	}
	if d.Failing >= SharedOutageMinPods && 2*d.Failing > len(w.Pods) {
		d.SharedOutage = true
		d.Held[HeldSharedOutage] += len(candidates)
		return d
	}
	slices.SortFunc(candidates, func(a, b due) int {
		if a.pod.Ready != b.pod.Ready {
			if !a.pod.Ready {
				return -1
			}
			return 1
		}
		if c := a.since.Compare(b.since); c != 0 {
			return c
		}
		return strings.Compare(a.pod.Name, b.pod.Name)
	})
	for _, c := range candidates {
		cost := 0
		if c.pod.Ready {
			cost = 1
		}
		if restarting >= w.MaxUnavailable || unavailable+cost > w.MaxUnavailable {
			d.Held[HeldBudget]++
			continue
		}
		restarting++
		unavailable += cost
		d.Restart = append(d.Restart, Plan{Pod: c.pod.UID, Containers: c.containers, Since: c.since})
	}
	return d
}

// NextRestart is the history entry of a restart at now after last (zero: none before): the
// back-off doubles from BackoffBase up to BackoffMax, and starts again from BackoffBase after
// BackoffReset without a restart.
func NextRestart(last Restart, now time.Time) Restart {
	delay := BackoffBase
	if !last.At.IsZero() && now.Sub(last.At) < BackoffReset {
		delay = min(2*last.Delay.Duration(), BackoffMax)
		delay = max(delay, BackoffBase)
	}
	return Restart{At: now, Delay: Seconds(delay / time.Second)}
}

// MaxUnavailable reads the max-unavailable annotation's value (empty: DefaultMaxUnavailable)
// for a workload of total pods: an integer, or a percentage of total rounded down; at least 1.
func MaxUnavailable(value string, total int) (int, error) {
	if value == "" {
		value = DefaultMaxUnavailable
	}
	var n int
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil || p < 0 || p > 100 {
			return 1, fmt.Errorf("%q is not a percentage from 0%% to 100%%", value)
		}
		n = total * p / 100
	} else {
		v, err := strconv.Atoi(value)
		if err != nil || v < 0 {
			return 1, fmt.Errorf("%q is neither a non-negative integer nor a percentage", value)
		}
		n = v
	}
	return max(n, 1), nil
}
