package crrexec

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// ReasonRuntimeUnavailable is the Warning Event recorded on a CRR whose
// pod's containers cannot be listed through CRI.
const ReasonRuntimeUnavailable = "RuntimeUnavailable"

// runtimeWaitPrefix starts status.message while the runtime cannot answer.
const runtimeWaitPrefix = "waiting for the container runtime: "

// runtimeUnavailable tells the CRR that the runtime cannot be reached: it
// writes status.message (phase unchanged) and records a Warning Event, once
// per distinct error text, since a retry whose message is already in place
// writes nothing. It returns listErr, joined with a failed write, for the
// queue to retry with backoff.
func (e *Executor) runtimeUnavailable(ctx context.Context, s *statusWriter, listErr, criErr error) error {
	msg := runtimeWaitPrefix + cri.Redact(criErr.Error())
	if s.cur().Status.Message == msg {
		return listErr
	}
	s.edit().Status.Message = msg
	if err := s.flush(ctx); err != nil {
		return errors.Join(listErr, err)
	}
	klog.FromContext(ctx).Info("Container runtime unavailable; waiting", "err", criErr)
	e.recorder.Event(s.cur(), corev1.EventTypeWarning, ReasonRuntimeUnavailable, msg)
	return listErr
}

// runtimeGone reports whether a CRI call failed because the runtime could
// not be reached (gRPC Unavailable: socket gone, connection refused or
// closed) or did not answer in time (DeadlineExceeded: a runtime that hangs
// rather than dies), rather than because of the container. Either way the
// container stays Recreating and the next sync asks the runtime again.
func runtimeGone(err error) bool {
	c := status.Code(err)
	return c == codes.Unavailable || c == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)
}

// clearRuntimeWait drops the message a previous sync wrote while the runtime
// was down; it is written with the next change of this sync.
func (s *statusWriter) clearRuntimeWait() {
	if strings.HasPrefix(s.cur().Status.Message, runtimeWaitPrefix) {
		s.edit().Status.Message = ""
	}
}

// RuntimeGone reports whether a CRI call failed because the runtime could
// not be reached or did not answer in time, rather than because of the
// container (see runtimeGone).
func RuntimeGone(err error) bool { return runtimeGone(err) }
