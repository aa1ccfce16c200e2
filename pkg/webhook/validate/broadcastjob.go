package validate

// BroadcastJobPath is where the API server sends BroadcastJobs (both versions, as v1beta1).
const BroadcastJobPath = "/validate-apps-kruise-io-broadcastjob"
