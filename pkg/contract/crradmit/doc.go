// Package crradmit is what the ContainerRecreateRequest controller and the CRR webhooks
// (validating and mutating) agree on when a request is admitted: whether its pod can ever
// carry it out (CheckPod, with messages both answer in the same words), whether it must wait,
// which fields only admission writes, and the JSON patch that fills a request in from its pod.
// Pure functions of the request and the pod: no client, no cache.
package crradmit
