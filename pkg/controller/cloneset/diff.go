package cloneset

// PodFacts is what the diff needs to know of one active (not terminating) pod of a CloneSet.
type PodFacts struct {
	// Updated: the pod is at the update revision.
	Updated bool
	// PreparingDelete: the pod waits on a preDelete hook and will go.
	PreparingDelete bool
	// SpecifiedDelete: the pod is asked to go (label apps.kruise.io/specified-delete or
	// scaleStrategy.podsToDelete) and is not PreparingDelete yet.
	SpecifiedDelete bool
	// Available: ready for minReadySeconds, in lifecycle state Normal.
	Available bool
	// Recreate: the pod's move needs a new pod (ReCreate, or a change that cannot be applied in
	// place): for an old pod its update to the update revision, for an updated pod its rollback
	// to the current revision (read only when Budget.Rollback).
	Recreate bool
}

// Diff is what one reconcile may do, decided from counts alone. The controller never scales and
// updates in the same pass: when Scale is non-zero it scales and waits for the cache.
type Diff struct {
	// ScaleUp pods to create, of which ScaleUpOld at the current revision (the rest at the
	// update revision); at most ScaleUpLimit of them now (scaleStrategy.maxUnavailable).
	ScaleUp, ScaleUpOld, ScaleUpLimit int
	// ScaleDown pods to delete beyond those asked to go, of which ScaleDownOld of the current
	// revision.
	ScaleDown, ScaleDownOld int
	// DeleteReadyLimit: how many available pods may be deleted now (asked to go or scaled down).
	DeleteReadyLimit int
	// Update: old pods to move to the update revision; UpdateMaxUnavailable bounds how many
	// pods may be unavailable once they are (the update's own and those already down).
	Update, UpdateMaxUnavailable int
	// Rollback: updated pods to move back to the current revision (Budget.Rollback), within
	// UpdateMaxUnavailable as an update. Never non-zero with Update.
	Rollback int
	// Surge: pods above Replicas this pass allows, SurgeOld of them at the current revision.
	Surge, SurgeOld int
}

// counts are the tallies of a CloneSet's pods the diff is computed from.
type counts struct {
	all                        int
	oldAll                     int
	newActive, oldActive       int
	toDeleteNew, toDeleteOld   int
	preDeleteNew, preDeleteOld int
	unavailable                int
	oldRecreate, newRecreate   int
}

func tally(pods []PodFacts) counts {
	var c counts
	c.all = len(pods)
	for _, p := range pods {
		if !p.Updated {
			c.oldAll++
		}
		switch {
		case p.PreparingDelete && p.Updated:
			c.preDeleteNew++
			c.unavailable++
		case p.PreparingDelete:
			c.preDeleteOld++
			c.unavailable++
		case p.Updated:
			c.newActive++
			if p.SpecifiedDelete {
				c.toDeleteNew++
			} else {
				if !p.Available {
					c.unavailable++
				}
				if p.Recreate {
					c.newRecreate++
				}
			}
		default:
			c.oldActive++
			if p.SpecifiedDelete {
				c.toDeleteOld++
			} else {
				if !p.Available {
					c.unavailable++
				}
				if p.Recreate {
					c.oldRecreate++
				}
			}
		}
	}
	return c
}

// Calculate decides a reconcile's scale and update counts for pods under budget b.
//
// The counts are OpenKruise's, so that a CloneSet rolls out the same way, but for two things. A
// surge is spent on an update only for pods that must be recreated (or, with maxUnavailable 0,
// as the only room there is): a pod updated in place needs no extra pod; the reference's surge
// there created pods and deleted old ones that could have been updated (OpenKruise #2369). And a
// rollback (b.Rollback) moves updated pods back only when there are both too few old pods and
// too many updated ones; the reference's sum also rolls pods back while pods are missing or in
// excess, which the scale pass that comes first would undo.
func Calculate(b Budget, pods []PodFacts) Diff {
	c := tally(pods)
	var d Diff

	// Old pods beyond the partition go to the update revision. Updated pods beyond
	// replicas-partition go back to the current revision only with b.Rollback; without it (as
	// the reference without CloneSetPartitionRollback) an updated pod stays updated.
	updateOld := max(c.oldActive-b.Partition, 0)
	surplusNew := min(c.newActive-(b.Replicas-b.Partition), 0)
	rollback := 0
	if b.Rollback {
		rollback = min(max(b.Partition-c.oldActive, 0), max(c.newActive-(b.Replicas-b.Partition), 0))
	}

	if b.MaxSurge > 0 {
		// Replace pods asked to go before deleting them if deleting first would break
		// maxUnavailable.
		toDelete := c.toDeleteNew + c.toDeleteOld
		scaleSurge, scaleSurgeOld := 0, 0
		if toDelete > 0 {
			scaleSurge = min(max(c.unavailable+toDelete-b.MaxUnavailable, 0), toDelete)
			scaleSurgeOld = max(scaleSurge-c.toDeleteNew, 0)
		}
		// Create updated pods first for old pods that will be recreated; those updated in
		// place need no surge, unless no pod may be unavailable at all: then the surge is the
		// capacity that lets them go unready one at a time (and as many old pods as the surge
		// are replaced rather than updated, which is what a surge means).
		updateSurge := min(updateOld, -surplusNew, c.oldRecreate)
		if b.MaxUnavailable == 0 {
			updateSurge = min(updateOld, -surplusNew)
		}
		// A rollback the same way, the extra pods at the current revision.
		rollbackSurge := min(rollback, c.newRecreate)
		if b.MaxUnavailable == 0 {
			rollbackSurge = rollback
		}
		switch {
		case scaleSurge >= max(updateSurge, rollbackSurge):
			d.Surge, d.SurgeOld = min(b.MaxSurge, scaleSurge), min(b.MaxSurge, scaleSurgeOld)
		case rollbackSurge > 0:
			d.Surge = min(b.MaxSurge, rollbackSurge)
			d.SurgeOld = d.Surge
		default:
			d.Surge = min(b.MaxSurge, updateSurge)
		}
	}

	total, totalOld := c.all, c.oldAll
	// Pods waiting on their preDelete hook are on their way out: they count towards replicas
	// (unless excluded) until they are gone, but are never what is still to delete.
	goingNew, goingOld := c.toDeleteNew+c.preDeleteNew, c.toDeleteOld+c.preDeleteOld
	if b.ExcludePreparingDelete {
		total -= c.preDeleteNew + c.preDeleteOld
		totalOld -= c.preDeleteOld
		goingNew, goingOld = c.toDeleteNew, c.toDeleteOld
	}
	wantTotal := b.Replicas + d.Surge
	wantOld := b.Partition + d.SurgeOld

	if n := wantTotal - total; n > 0 {
		d.ScaleUp = n
		d.ScaleUpOld = min(max(wantOld-totalOld, 0), n)
		d.ScaleUpLimit = min(n, max(b.ScaleMaxUnavailable-c.unavailable, 0))
	}
	if n := total - goingNew - goingOld - wantTotal; n > 0 {
		d.ScaleDown = n
		d.ScaleDownOld = min(max(totalOld-goingOld-wantOld, 0), n)
	}
	if c.toDeleteNew+c.toDeleteOld > 0 || d.ScaleDown > 0 {
		d.DeleteReadyLimit = max(b.MaxUnavailable+(c.all-b.Replicas)-c.unavailable, 0)
	}

	d.Update = min(updateOld, -surplusNew)
	d.Rollback = rollback
	if d.Update > 0 || d.Rollback > 0 {
		d.UpdateMaxUnavailable = b.MaxUnavailable + c.all - b.Replicas
	}
	return d
}
