package dashboard

// The metrics kruise documents (docs/operations.md, "Metrics", and the observability contract of
// issue 23), with their type and the component that exports them. The dashboard may use these
// names and no others; TestDashboardUsesDocumentedMetrics holds it to that, and the e2e test
// TestDashboardMetricsExported to the running components' /metrics.

// exporter says which component's /metrics has a metric.
type exporter int

const (
	daemon exporter = 1 << iota
	controller
	both = daemon | controller
)

// componentLabel is the value of the scrape's `component` label for each component.
var componentLabel = map[exporter]string{daemon: "kruise-daemon", controller: "kruise-controller"}

type metricType string

const (
	counter   metricType = "counter"
	gauge     metricType = "gauge"
	histogram metricType = "histogram"
)

type documentedMetric struct {
	name string
	typ  metricType
	in   exporter
}

var documentedMetrics = []documentedMetric{
	// kruise-daemon
	{"kruise_daemon_cri_up", gauge, daemon},
	{"kruise_daemon_runtime_info", gauge, daemon},
	{"kruise_daemon_cri_request_duration_seconds", histogram, daemon},
	{"kruise_daemon_cri_request_errors_total", counter, daemon},
	{"kruise_daemon_crr_completed_total", counter, daemon},
	{"kruise_daemon_container_recreate_duration_seconds", histogram, daemon},
	{"kruise_daemon_env_from_metadata_restarts_total", counter, daemon},
	{"kruise_daemon_image_pulls_total", counter, daemon},
	{"kruise_daemon_image_pull_duration_seconds", histogram, daemon},
	{"kruise_daemon_image_pulls_in_flight", gauge, daemon},
	{"kruise_daemon_image_pull_failures_total", counter, daemon},        // new in issue 23
	{"kruise_daemon_credential_provider_errors_total", counter, daemon}, // new in issue 23
	{"kruise_daemon_pod_probes_total", counter, daemon},                 // new in issue 39
	{"kruise_daemon_pod_probe_status_writes_total", counter, daemon},    // new in issue 39

	// kruise-controller
	{"kruise_sidecar_terminations_total", counter, controller},
	{"leader_election_master_status", gauge, controller},
	{"leader_election_slowpath_total", counter, controller},
	{"kruise_webhook_admission_duration_seconds", histogram, controller},
	{"kruise_webhook_admission_requests_total", counter, controller},
	{"kruise_webhook_admission_rejections_total", counter, controller},
	{"kruise_webhook_conversion_duration_seconds", histogram, controller},
	{"kruise_webhook_conversion_requests_total", counter, controller},
	{"kruise_webhook_converted_objects_total", counter, controller},
	{"kruise_cloneset_reconcile_duration_seconds", histogram, controller},
	{"kruise_cloneset_inplace_update_duration_seconds", histogram, controller},
	{"kruise_cloneset_pods_updated_total", counter, controller},
	{"kruise_cloneset_expectations_timed_out_total", counter, controller},
	{"kruise_sidecarset_not_upgradable_pods", gauge, controller},
	{"kruise_sidecarset_pod_upgrades_total", counter, controller},
	{"kruise_crr_completed_total", counter, controller},                        // new in issue 23
	{"kruise_crr_waiting_on_absent_daemon", gauge, controller},                 // new in issue 23
	{"kruise_webhook_certificate_expiry_timestamp_seconds", gauge, controller}, // new in issue 23
	{"kruise_workload_replicas", gauge, controller},                            // new in issue 23
	{"kruise_workload_paused", gauge, controller},                              // new in issue 23
	{"kruise_workload_partition", gauge, controller},                           // new in issue 23
	{"kruise_workload_progress_deadline_exceeded", gauge, controller},          // new in issue 23

	// Both
	{"kruise_feature_enabled", gauge, both},
	{"workqueue_depth", gauge, both},
	{"workqueue_adds_total", counter, both},
	{"workqueue_retries_total", counter, both},
	{"workqueue_queue_duration_seconds", histogram, both},
	{"workqueue_work_duration_seconds", histogram, both},
	{"workqueue_unfinished_work_seconds", gauge, both},
	{"workqueue_longest_running_processor_seconds", gauge, both},
	{"rest_client_requests_total", counter, both},
	{"rest_client_request_duration_seconds", histogram, both},
	{"rest_client_rate_limiter_duration_seconds", histogram, both},
	{"rest_client_request_retries_total", counter, both},
	{"process_cpu_seconds_total", counter, both},
	{"process_resident_memory_bytes", gauge, both},
	{"process_virtual_memory_bytes", gauge, both},
	{"process_open_fds", gauge, both},
	{"process_start_time_seconds", gauge, both},
	{"go_goroutines", gauge, both},
	{"go_memstats_heap_inuse_bytes", gauge, both},
}

// documentedSeries maps every series name a query may select (a histogram's _bucket, _sum and
// _count; the name itself for the others) to the components exporting it.
func documentedSeries() map[string]exporter {
	out := map[string]exporter{}
	for _, m := range documentedMetrics {
		if m.typ == histogram {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[m.name+suffix] = m.in
			}
			continue
		}
		out[m.name] = m.in
	}
	return out
}
