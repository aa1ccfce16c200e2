package cliutil

// ManualRunAnnotation marks a job created by hand from a cron job rather
// than by its schedule, with kubectl's key and value (kubectl create job
// --from=cronjob/NAME sets it; `create job --from=acj/NAME` does too, and
// describe shows such a job's run as "manual").
const (
	ManualRunAnnotation = "cronjob.kubernetes.io/instantiate"
	ManualRunValue      = "manual"
)
