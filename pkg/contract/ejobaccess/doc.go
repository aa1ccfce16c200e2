// Package ejobaccess is what the EphemeralJob webhooks and controller agree on about who asked
// for a job: the mutating webhook records the requesting user in RequesterAnnotation, the
// validating webhook and the controller ask the API server (SubjectAccessReviews) whether that
// user may exec into, and add ephemeral containers to, the pods, so that a job never reaches a
// pod its requester could not reach with kubectl debug.
package ejobaccess
