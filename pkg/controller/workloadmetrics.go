package controller

import (
	"fmt"

	"github.com/nodekruise/kruise/pkg/controller/workloadmetrics"
)

// buildWorkloadMetrics adapts Deps to the workload gauges. They read the
// informers of the CloneSet, Advanced StatefulSet and DaemonSet and
// SidecarSet controllers (shared: no watch of their own) and speak only
// while the term runs, that is while this replica leads.
func buildWorkloadMetrics(d Deps) (Controller, error) {
	apps := d.KruiseInformerFactory.Apps().V1beta1()
	c := workloadmetrics.New(workloadmetrics.Listers{
		CloneSets:    apps.CloneSets().Lister(),
		StatefulSets: apps.StatefulSets().Lister(),
		DaemonSets:   apps.DaemonSets().Lister(),
		SidecarSets:  apps.SidecarSets().Lister(),
	})
	if err := d.Metrics.Register(c); err != nil {
		return nil, fmt.Errorf("registering the workload metrics: %w", err)
	}
	return c, nil
}
