package certs

import "github.com/prometheus/client_golang/prometheus"

var expiryDesc = prometheus.NewDesc("kruise_webhook_certificate_expiry_timestamp_seconds",
	"Unix time at which the serving certificate the webhook server currently serves (managed or external) stops being valid (its NotAfter). "+
		"Absent until one is loaded.", nil, nil)

// expiryCollector reads the serving certificate's NotAfter at scrape time,
// so it follows every renewal and reload without being told.
type expiryCollector struct{ m *Manager }

// ExpiryCollector returns the collector of
// kruise_webhook_certificate_expiry_timestamp_seconds for m's certificate.
func (m *Manager) ExpiryCollector() prometheus.Collector { return expiryCollector{m: m} }

func (c expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

func (c expiryCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.current.Load()
	if s == nil || s.leaf == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, float64(s.leaf.NotAfter.Unix()))
}
