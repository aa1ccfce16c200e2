// Package imagepulljob runs v1beta1 ImagePullJobs: it writes each job's
// request for its image into the NodeImages of the selected nodes (a few at
// a time, per spec.parallelism), reads the node daemons' results back from
// the NodeImages' status, rolls them up into the job's status, and withdraws
// the request when the job finishes or goes away.
//
// Two queues split the work. The job queue (key "namespace/name") decides,
// per job, which nodes should carry its request (its plan) and writes the
// job's status. The node queue (key: NodeImage name) makes one NodeImage's
// spec agree with the plans of every job that targets it, in one write, and
// drops owner references of jobs that no longer exist. Plans live in memory
// only; everything in them is recomputed from the API objects after a
// restart. Only a running job naming pull secrets carries a finalizer
// (OpenKruise's protection finalizer, finalizer.go), until the pull-secret
// copies made for it are released.
//
// Work is proportional to change: a NodeImage status update enqueues only
// the jobs owning the tags whose status changed; a NodeImage spec change
// only the jobs it leaves without a status update to come (specWakes); a
// NodeImage label change only the jobs with a label selector whose match
// changed; a pod event only the podSelector jobs of its namespace that match
// it. Nothing is resynced periodically; time-based steps (deadline, ttl,
// re-pull) are timers that a job's next sync replaces or cancels
// (recheck.go), so a finished job is not looked at again.
//
// Pull results are dated on the controller's clock, never the nodes'
// (results.go). A NodeImage, shared by every job on its node, is kept
// within a size budget and the schema's bounds: a request that does not fit
// is left out and its job counts the node as failed (budget.go). Why a job
// failed on a node is kept on the job (failures.go).
//
// Where things are:
//
//	controller.go  Config, New, Run: building and running the controller
//	index.go       the informer indexes and their lookups
//	handlers.go    the informer event handlers: what a change queues
//	changes.go     what changed between two NodeImages, which jobs it concerns
//	sync.go        the job sync: plan, status, completion, withdrawal, ttl
//	evaluate.go    where each target node stands; parallelism slots
//	targets.go     which nodes a job targets
//	request.go     what a job asks of a NodeImage
//	status.go      the job's status message, its write, its Events
//	failures.go    why a job failed on a node
//	secrets.go     pull secrets that cannot be used
//	finalizer.go   the protection finalizer: added, released
//	plans.go       the plans, in a store of their own (planStore)
//	nodesync.go    the node sync: one NodeImage's spec from the plans
//	compose.go     building a NodeImage spec from plans
//	merge.go       merging the requests of jobs that share a tag or an image
//	budget.go      keeping a NodeImage within its budget
//	refusals.go    which jobs a node left out for lack of room
//	tags.go        reading a NodeImage's tag entries
//	results.go     dating pull results on the controller's clock
//	recheck.go     the timed looks at jobs (deadline, re-pull, ttl)
package imagepulljob
