package nodeimage

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Event reasons recorded on nodes.
const (
	// ReasonNodeImageFailed: the node's NodeImage could not be created or
	// updated for a reason a retry is unlikely to cure (e.g. it is invalid,
	// or kruise-controller lacks the permission).
	ReasonNodeImageFailed = "NodeImageSyncFailed"
)

// sync brings the NodeImage named name in line with the node of that name.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "node", name)
	ctx = klog.NewContext(ctx, logger)

	node, err := c.nodeLister.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		node = nil
	case err != nil:
		return 0, err
	}
	ni, err := c.nodeImageLister.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		ni = nil
	case err != nil:
		return 0, err
	}

	switch {
	case node == nil:
		if ni == nil {
			return 0, nil
		}
		if _, fake := ni.Labels[appsv1beta1.FakeNodeImageLabel]; fake {
			logger.V(4).Info("NodeImage without a node is labelled as a test one; left alone", "label", appsv1beta1.FakeNodeImageLabel)
			return 0, nil
		}
		return 0, c.deleteOrphan(ctx, ni)
	case isVirtual(node):
		if ni == nil {
			return 0, nil
		}
		logger.Info("Deleting the NodeImage of a virtual-kubelet node")
		return 0, c.delete(ctx, ni)
	case ni == nil:
		if !isReady(node) {
			logger.V(4).Info("Node is not Ready; its NodeImage is created once it is")
			return 0, nil
		}
		return 0, c.create(ctx, node)
	case ni.DeletionTimestamp != nil:
		// Being deleted: its delete event brings the node back here, and a
		// new one is created then.
		logger.V(4).Info("NodeImage is being deleted; waiting")
		return 0, nil
	default:
		return 0, c.updateMetadata(ctx, node, ni)
	}
}

// ownerRef is the reference to the node every NodeImage carries.
func ownerRef(node *corev1.Node) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
}

// isNodeRef reports whether r refers to a Node.
func isNodeRef(r metav1.OwnerReference) bool {
	return r.APIVersion == "v1" && r.Kind == "Node"
}

func ownerRefEqual(a, b metav1.OwnerReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		equalBoolPtr(a.Controller, b.Controller) && equalBoolPtr(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

func equalBoolPtr(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// wantOwnerRefs is refs with the (first) reference to a Node replaced by
// the reference to node, other Node references dropped, and the reference
// appended if there was none. References to other kinds are kept.
func wantOwnerRefs(refs []metav1.OwnerReference, node *corev1.Node) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	placed := false
	for _, r := range refs {
		switch {
		case !isNodeRef(r):
			out = append(out, r)
		case !placed:
			out = append(out, ownerRef(node))
			placed = true
		}
	}
	if !placed {
		out = append(out, ownerRef(node))
	}
	return out
}

// create creates the node's NodeImage, with the node's labels, the owner
// reference and an empty spec.
func (c *Controller) create(ctx context.Context, node *corev1.Node) error {
	ni := &appsv1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{
			Name:            node.Name,
			Labels:          maps.Clone(node.Labels),
			OwnerReferences: []metav1.OwnerReference{ownerRef(node)},
		},
	}
	_, err := c.kruiseClient.AppsV1beta1().NodeImages().Create(ctx, ni, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// The cache has not seen it yet: its add event brings it here.
		klog.FromContext(ctx).V(4).Info("NodeImage already exists; waiting for the cache")
		return nil
	case err != nil:
		c.warnIfPermanent(node, "creating", err)
		return fmt.Errorf("creating NodeImage %s: %w", node.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created NodeImage")
	return nil
}

// metadataPatch is the JSON merge patch of the metadata this controller
// owns. A nil value in Labels removes that label; the UID makes the patch
// fail rather than touch a NodeImage recreated since the cache saw it.
type metadataPatch struct {
	Metadata struct {
		UID             types.UID               `json:"uid,omitempty"`
		Labels          map[string]*string      `json:"labels,omitempty"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`
	} `json:"metadata"`
}

// updateMetadata patches the NodeImage's labels and owner references when
// they differ from what the node says. Spec and status are not in the
// patch, so the writes of the ImagePullJob controller and the daemon are
// never overwritten.
func (c *Controller) updateMetadata(ctx context.Context, node *corev1.Node, ni *appsv1beta1.NodeImage) error {
	var p metadataPatch
	p.Metadata.UID = ni.UID
	changed := false
	if !maps.Equal(ni.Labels, node.Labels) {
		labels := map[string]*string{}
		for k := range ni.Labels {
			if _, ok := node.Labels[k]; !ok {
				labels[k] = nil
			}
		}
		for k, v := range node.Labels {
			if cur, ok := ni.Labels[k]; !ok || cur != v {
				labels[k] = &v
			}
		}
		p.Metadata.Labels = labels
		changed = true
	}
	if refs := wantOwnerRefs(ni.OwnerReferences, node); !slices.EqualFunc(refs, ni.OwnerReferences, ownerRefEqual) {
		p.Metadata.OwnerReferences = refs
		changed = true
	}
	if !changed {
		return nil
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = c.kruiseClient.AppsV1beta1().NodeImages().Patch(ctx, ni.Name, types.MergePatchType, body, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Deleted meanwhile: its delete event brings the node back here.
		return nil
	case err != nil:
		c.warnIfPermanent(node, "updating", err)
		return fmt.Errorf("patching NodeImage %s: %w", ni.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated NodeImage metadata", "labels", p.Metadata.Labels != nil, "ownerReferences", p.Metadata.OwnerReferences != nil)
	return nil
}

// deleteOrphan deletes a NodeImage whose node the cache does not know,
// once the API server confirms the node is gone: a node created a moment
// ago may not have reached the cache yet.
func (c *Controller) deleteOrphan(ctx context.Context, ni *appsv1beta1.NodeImage) error {
	_, err := c.client.CoreV1().Nodes().Get(ctx, ni.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(4).Info("Node exists but is not cached yet; waiting for its event")
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("checking node %s: %w", ni.Name, err)
	}
	klog.FromContext(ctx).Info("Deleting the NodeImage of a deleted node")
	return c.delete(ctx, ni)
}

// delete deletes the NodeImage the cache shows (and no newer one).
func (c *Controller) delete(ctx context.Context, ni *appsv1beta1.NodeImage) error {
	if ni.DeletionTimestamp != nil {
		return nil
	}
	uid := ni.UID
	err := c.kruiseClient.AppsV1beta1().NodeImages().Delete(ctx, ni.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodeImage %s: %w", ni.Name, err)
	}
	return nil
}

// warnIfPermanent records a Warning on the node for errors that a retry
// will not cure by itself; transient ones are only retried and logged.
func (c *Controller) warnIfPermanent(node *corev1.Node, doing string, err error) {
	if c.recorder == nil {
		return
	}
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
		c.recorder.Eventf(node, corev1.EventTypeWarning, ReasonNodeImageFailed, "Failed %s NodeImage %s: %v", doing, node.Name, err)
	}
}
