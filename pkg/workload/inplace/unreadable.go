package inplace

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// EventReasonUnreadableAnnotation is the reason of the Warning Event a workload records on itself
// for a pod it leaves alone because of an AnnotationError.
const EventReasonUnreadableAnnotation = "UnreadableInPlaceUpdateAnnotation"

// AnnotationError says that an annotation the engine keeps on a pod (the update state or the
// grace record) does not decode. Anyone who may patch the pod can write one, so a workload skips
// such a pod and reports it rather than failing its whole pass; any other error (the API
// server's) is still an error of the pass.
type AnnotationError struct {
	// Pod is the pod's namespace/name.
	Pod string
	Key string
	// Problem says what is wrong with the value, e.g. "is not an in-place update state".
	Problem string
	// Err is the decoding error, if any.
	Err error
}

func (e *AnnotationError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("pod %s: annotation %s %s", e.Pod, e.Key, e.Problem)
	}
	return fmt.Sprintf("pod %s: annotation %s %s: %v", e.Pod, e.Key, e.Problem, e.Err)
}

func (e *AnnotationError) Unwrap() error { return e.Err }

func annotationError(pod *corev1.Pod, key, problem string, err error) *AnnotationError {
	return &AnnotationError{Pod: pod.Namespace + "/" + pod.Name, Key: key, Problem: problem, Err: err}
}

// AsAnnotationError finds an *AnnotationError in err's chain.
func AsAnnotationError(err error) (*AnnotationError, bool) {
	var ae *AnnotationError
	ok := errors.As(err, &ae)
	return ae, ok
}

// graceWithoutState is the error of a pod that has a grace record but no state: the record's
// period is counted from the state's timestamp, so it cannot be finished.
func graceWithoutState(pod *corev1.Pod) *AnnotationError {
	key, _, _ := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld)
	return annotationError(pod, key, "is present without an in-place update state", nil)
}

// Unreadable returns the first problem with the pod's in-place update annotations that would
// make Decide, UpdateDone, FinishGrace or NextBatch fail on it, or nil when they read.
func Unreadable(pod *corev1.Pod) *AnnotationError {
	g, err := ReadGrace(pod)
	if ae, ok := AsAnnotationError(err); ok {
		return ae
	}
	state, err := ReadState(pod)
	if ae, ok := AsAnnotationError(err); ok {
		return ae
	}
	if g == nil {
		return nil
	}
	if state == nil {
		return graceWithoutState(pod)
	}
	if _, err := g.Spec(); err != nil {
		return badGracePatch(pod, err)
	}
	return nil
}

// badGracePatch is the error of a grace record whose metadata patch does not decode.
func badGracePatch(pod *corev1.Pod, err error) *AnnotationError {
	key, _, _ := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld)
	return annotationError(pod, key, "holds a metadata patch that does not decode", err)
}

// ReportUnreadable makes a skipped pod visible: a Warning Event on the workload obj naming the
// pod and the annotation, and a log line at V(2). err is the AnnotationError (Result.Err of
// OutcomeUnreadable). The recorder aggregates the Events of a pod reported on every pass.
func ReportUnreadable(ctx context.Context, rec record.EventRecorder, obj runtime.Object, pod *corev1.Pod, err error) {
	key := ""
	if ae, ok := AsAnnotationError(err); ok {
		key = ae.Key
	}
	klog.FromContext(ctx).V(2).Info("Leaving a pod whose in-place update annotation does not decode",
		"pod", klog.KObj(pod), "annotation", key, "err", err)
	rec.Eventf(obj, corev1.EventTypeWarning, EventReasonUnreadableAnnotation,
		"pod %s is left as it is (not updated in place, not refreshed): %v; fix or remove the annotation to let the rollout take it",
		pod.Name, err)
}
