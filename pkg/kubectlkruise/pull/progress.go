package pull

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// nodeState is how the job's pull stands on one node.
type nodeState struct {
	phase   string
	message string
}

func (s nodeState) String() string {
	if s.message == "" {
		return s.phase
	}
	return s.phase + " (" + s.message + ")"
}

// progress is the job and the per-node states read from the NodeImages,
// and what has been printed of them.
type progress struct {
	job     *appsv1beta1.ImagePullJob
	nodes   map[string]nodeState
	printed map[string]string
	counts  string
}

func newProgress(job *appsv1beta1.ImagePullJob) *progress {
	return &progress{job: job, nodes: map[string]nodeState{}, printed: map[string]string{}}
}

// observe reads the job's pull on the node a NodeImage is for: the tag
// entry the job owns, and the status of that entry's version. A NodeImage
// without such an entry is not one of the job's nodes, or no longer holds
// its entry: the last state seen is kept.
func (p *progress) observe(ni *appsv1beta1.NodeImage) {
	if state, ok := jobState(ni, p.job.UID); ok {
		p.nodes[ni.Name] = state
	}
}

// jobState is the state of the pull that the job uid asked of ni.
func jobState(ni *appsv1beta1.NodeImage, uid types.UID) (nodeState, bool) {
	for repo, image := range ni.Spec.Images {
		for _, tag := range image.Tags {
			if !ownedBy(tag, uid) {
				continue
			}
			for _, st := range ni.Status.ImageStatuses[repo].Tags {
				if st.Tag == tag.Tag && st.Version == tag.Version {
					return nodeState{phase: string(st.Phase), message: st.Message}, true
				}
			}
			return nodeState{phase: string(appsv1beta1.ImagePhaseWaiting)}, true
		}
	}
	return nodeState{}, false
}

func ownedBy(tag appsv1beta1.ImageTagSpec, uid types.UID) bool {
	for _, ref := range tag.OwnerReferences {
		if ref.Kind == "ImagePullJob" && ref.UID == uid {
			return true
		}
	}
	return false
}

// states are the nodes' states with the job's own verdicts on top: the
// job's failures carry the reason the controller recorded (a node whose
// NodeImage was full has no tag entry at all).
func (p *progress) states() map[string]nodeState {
	all := make(map[string]nodeState, len(p.nodes))
	for n, s := range p.nodes {
		all[n] = s
	}
	for _, n := range p.job.Status.FailedNodes {
		s := all[n]
		s.phase = string(appsv1beta1.ImagePhaseFailed)
		all[n] = s
	}
	for _, f := range p.job.Status.Failures {
		msg := f.Reason
		if f.Message != "" {
			msg += ": " + f.Message
		}
		all[f.Node] = nodeState{phase: string(appsv1beta1.ImagePhaseFailed), message: msg}
	}
	return all
}

// print writes what changed since the last call: the job's counts, and
// one line per node whose state changed, in node-name order.
func (p *progress) print(out io.Writer) {
	st := p.job.Status
	if st.Desired > 0 {
		counts := fmt.Sprintf("%s: %d pulling, %d succeeded, %d failed", cliutil.Count(int(st.Desired), "node"), st.Active, st.Succeeded, st.Failed)
		if counts != p.counts {
			p.counts = counts
			fmt.Fprintf(out, "imagepulljob %s: %s\n", p.job.Name, counts)
		}
	}
	states := p.states()
	names := make([]string, 0, len(states))
	for n := range states {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		line := states[n].String()
		if p.printed[n] == line {
			continue
		}
		p.printed[n] = line
		fmt.Fprintf(out, "  %s: %s\n", n, line)
	}
}

// done reports whether the job has finished.
func (p *progress) done() bool { return p.job.Status.CompletionTime != nil }

// outcome is nil when no node failed, and otherwise an error listing the
// failed nodes with their reasons.
func (p *progress) outcome() error {
	states := p.states()
	var failed []string
	for n, s := range states {
		if s.phase == string(appsv1beta1.ImagePhaseFailed) {
			failed = append(failed, n)
		}
	}
	if p.job.Status.Desired == 0 && p.job.Status.Failed == 0 {
		// The controller completes a job that selects no node with a kruise-daemon at once;
		// with --wait the user asked for a pull, and none happened.
		return fmt.Errorf("imagepulljob %s pulled %s on no node: none of the nodes it selects has a kruise-daemon (a NodeImage); check the node names or selector with `kubectl get nodeimages`",
			p.job.Name, p.job.Spec.Image)
	}
	if len(failed) == 0 && p.job.Status.Failed == 0 {
		return nil
	}
	slices.Sort(failed)
	var lines []string
	for _, n := range failed {
		reason := states[n].message
		if reason == "" {
			reason = "no reason recorded"
		}
		lines = append(lines, fmt.Sprintf("  %s: %s", n, reason))
	}
	msg := fmt.Sprintf("pulling %s failed on %d of %s", p.job.Spec.Image, p.job.Status.Failed, cliutil.Count(int(p.job.Status.Desired), "node"))
	return fmt.Errorf("%s:\n%s\nsee `kubectl kruise describe imagepulljob/%s`", msg, strings.Join(lines, "\n"), p.job.Name)
}
