package imagepull

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

const (
	statusRetryBase = time.Second
	statusRetryMax  = 30 * time.Second
)

// writeLoop is the only writer of the NodeImage's status. Each wake-up
// computes the whole status from memory and patches what differs from the
// status the server holds. A token of the rate limiter is taken before a
// write: with one at hand the write goes out at once, without one the
// changes made while waiting go out together.
func (p *Puller) writeLoop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.statusCh:
		}
		if !p.statusStale() {
			// Most wake-ups are the echo of our own write or a spec change
			// that changes no status: they cost no token.
			continue
		}
		now := p.clock.Now()
		if d := p.limiter.ReserveN(now, 1).DelayFrom(now); d > 0 {
			if !p.sleep(ctx, d) {
				return
			}
			// What changed while we waited is in this write.
			select {
			case <-p.statusCh:
			default:
			}
		}
		if err := p.writeStatus(ctx); err != nil {
			failures++
			wait := min(statusRetryBase<<min(failures-1, 10), statusRetryMax)
			utilruntime.HandleErrorWithContext(ctx, err, "Writing the NodeImage status failed; retrying", "backoff", wait)
			if !p.sleep(ctx, wait) {
				return
			}
			p.statusChanged()
			continue
		}
		if failures > 0 {
			logger.V(2).Info("Wrote the NodeImage status after failures", "failures", failures)
		}
		failures = 0
	}
}

// statusStale reports whether the status computed from memory differs from
// the one last written or observed.
func (p *Puller) statusStale() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.obj == nil {
		return false
	}
	return p.written == nil || !equality.Semantic.DeepEqual(p.desiredStatusLocked(), p.written)
}

// writeStatus patches the status subresource with the image entries that
// changed (null for the removed ones) and the counters; it writes nothing
// when the status is as the server holds it. A merge patch of status
// leaves the controller's spec alone.
func (p *Puller) writeStatus(ctx context.Context) error {
	p.mu.Lock()
	if p.obj == nil {
		p.mu.Unlock()
		return nil
	}
	name := p.obj.Name
	desired := p.desiredStatusLocked()
	written := p.written
	p.mu.Unlock()

	if written != nil && equality.Semantic.DeepEqual(desired, written) {
		return nil
	}
	patch, err := appsv1beta1.StatusMergePatch(written, desired)
	if err != nil {
		return fmt.Errorf("building the status patch of NodeImage %s: %w", name, err)
	}
	got, err := p.client.NodeImages().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("NodeImage is gone; status not written")
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching the status of NodeImage %s: %w", name, err)
	}
	klog.FromContext(ctx).V(4).Info("Wrote the NodeImage status", "desired", desired.Desired, "succeeded", desired.Succeeded,
		"failed", desired.Failed, "pulling", desired.Pulling, "waiting", desired.Waiting)
	p.mu.Lock()
	if p.obj != nil && p.obj.Name == name {
		p.written = desired
		p.echoRV = got.ResourceVersion
		p.echoSeen = got.ResourceVersion == ""
	}
	p.mu.Unlock()
	return nil
}

// desiredStatusLocked is the status of the spec's tags as held in memory.
// Progress is left unset: CRI's PullImage reports no progress.
func (p *Puller) desiredStatusLocked() *appsv1beta1.NodeImageStatus {
	s := &appsv1beta1.NodeImageStatus{}
	for repo, img := range p.obj.Spec.Images {
		seen := map[string]bool{}
		var tags []appsv1beta1.ImageTagStatus
		for _, t := range img.Tags {
			st := p.tags[tagKey{repo, t.Tag}]
			if seen[t.Tag] || st == nil {
				continue
			}
			seen[t.Tag] = true
			tags = append(tags, appsv1beta1.ImageTagStatus{
				Tag:            t.Tag,
				Phase:          st.phase,
				StartTime:      st.start.DeepCopy(),
				CompletionTime: st.end.DeepCopy(),
				Version:        st.version,
				ImageID:        st.imageID,
				Message:        st.message,
			})
			s.Desired++
			switch st.phase {
			case appsv1beta1.ImagePhaseSucceeded:
				s.Succeeded++
			case appsv1beta1.ImagePhaseFailed:
				s.Failed++
			case appsv1beta1.ImagePhasePulling:
				s.Pulling++
			default:
				s.Waiting++
			}
		}
		if len(tags) > 0 {
			if s.ImageStatuses == nil {
				s.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
			}
			s.ImageStatuses[repo] = appsv1beta1.ImageStatus{Tags: tags}
		}
	}
	// firstSyncStatus is recorded once, with this daemon's first status
	// write on a NodeImage that has none, and kept from then on.
	if p.written != nil && p.written.FirstSyncStatus != nil {
		s.FirstSyncStatus = p.written.FirstSyncStatus.DeepCopy()
	} else {
		s.FirstSyncStatus = &appsv1beta1.SyncStatus{
			SyncAt:  *p.now(),
			Status:  appsv1beta1.SyncStatusSucceeded,
			Message: "kruise-daemon synced the NodeImage status",
		}
	}
	return s
}

// observeLocked takes in a status shown by the informer. Until it shows
// our last write, what it shows is older and ignored; after that, a status
// other than ours was written by someone else and is what we patch from.
func (p *Puller) observeLocked(obj *appsv1beta1.NodeImage) {
	if p.written == nil {
		p.written = obj.Status.DeepCopy()
		p.echoSeen = true
		return
	}
	if !p.echoSeen {
		if (p.echoRV != "" && obj.ResourceVersion == p.echoRV) || equality.Semantic.DeepEqual(&obj.Status, p.written) {
			p.echoSeen = true
		}
		return
	}
	if !equality.Semantic.DeepEqual(&obj.Status, p.written) {
		p.written = obj.Status.DeepCopy()
	}
}
