package ingest

import (
	"github.com/gitsave/gitsave/pkg/ingest/sanitize"
	"github.com/gitsave/gitsave/pkg/save"
	"github.com/gitsave/gitsave/pkg/worker"
)

// Sink receives the mirrored edits and resyncs; *worker.Manager is one.
type Sink interface {
	Submit(worker.Event)
	Resync(worker.ResyncBatch)
}

var _ Sink = (*worker.Manager)(nil)

// targetStater is implemented by a Sink that drops input for targets it does
// not serve yet (worker.Manager does, until the target's GitProvider is
// there). With it, a resync waits for the target to be served, and a target
// that becomes served (again) is resynced, so edits dropped meanwhile are not
// lost. Serving is re-checked on every reconcile: the GitTarget status update
// that follows a change of serving triggers one.
type targetStater interface {
	TargetState(target string) worker.TargetState
}

var _ targetStater = (*worker.Manager)(nil)

// servedLocked reports whether the sink serves target (always, for a sink
// that does not say).
func (c *Controller) servedLocked(target string) bool {
	return c.servingLocked(target) != ""
}

// servingLocked names who serves target: "" when nobody, else the branch of
// the worker serving it, so a move to another branch or repository (a new
// worker, which has not seen the edits so far) is noticed too.
func (c *Controller) servingLocked(target string) string {
	ts, ok := c.cfg.Sink.(targetStater)
	if !ok {
		return "sink"
	}
	st := ts.TargetState(target)
	if !st.Served {
		return ""
	}
	return st.Snapshot.URL + " " + st.Snapshot.Branch
}

// trackServingLocked queues a resync for every routed target that became
// served, or moved to another worker, since the last reconcile.
func (c *Controller) trackServingLocked() {
	for t := range c.served {
		if _, ok := c.routes.targets[t]; !ok {
			delete(c.served, t)
		}
	}
	for t := range c.routes.targets {
		by := c.servingLocked(t)
		if by != "" && by != c.served[t] {
			c.pendingResync[t] = true
		}
		c.served[t] = by
	}
}

// flushResyncsLocked sends every pending resync whose target's watches have
// all listed. Sending under c.mu orders the batch with the events submitted
// under the same lock, so the worker never receives a resync older than an
// event it already has.
func (c *Controller) flushResyncsLocked() {
	for t := range c.pendingResync {
		tr, ok := c.routes.targets[t]
		if !ok {
			// Nothing routed: the folder is left as it is (deleting a WatchRule
			// stops mirroring; it does not empty the folder).
			delete(c.pendingResync, t)
			continue
		}
		if !c.servedLocked(t) {
			continue // sent once served (trackServingLocked)
		}
		desired, ready := c.desiredLocked(tr)
		if !ready {
			continue // a watch has not listed yet; its list will flush again
		}
		delete(c.pendingResync, t)
		c.cfg.Sink.Resync(worker.ResyncBatch{Target: t, Desired: desired})
	}
}

// desiredLocked builds a target's folder from the known state of its watches;
// ready is false while one of them has not listed.
func (c *Controller) desiredLocked(tr targetRoute) (map[string][]byte, bool) {
	desired := map[string][]byte{}
	for _, k := range tr.Informers {
		w := c.watchers[k]
		if w == nil || !w.synced {
			return nil, false
		}
		for name, st := range w.objects {
			if st.controlled {
				continue
			}
			desired[sanitize.Path(tr.Path, k.Namespace, k.GVR.Resource, k.GVR.Group, name)] = st.content
		}
	}
	return desired, true
}

// submitLocked sends one edit to every target the watch feeds. The edit is stamped
// now, after its admission fact was matched: a CommitRequest that still found that
// fact pending (its ordering barrier) was received before the match, so the worker
// sees the edit as arriving after the request and releases the barrier.
func (c *Controller) submitLocked(k informerKey, name string, content []byte, author save.Author, key save.EditKey) {
	observed := c.cfg.Clock.Now()
	for _, t := range c.routes.byInformer[k] {
		tr := c.routes.targets[t]
		c.cfg.Sink.Submit(worker.Event{
			Target:   t,
			Path:     sanitize.Path(tr.Path, k.Namespace, k.GVR.Resource, k.GVR.Group, name),
			Content:  content,
			Author:   author,
			Key:      key,
			Observed: observed,
		})
	}
}

// authorOr returns the matched author, or the fallback for writes the webhook
// did not see (it was skipped, or a controller's write).
func (c *Controller) authorOr(a save.Author, ok bool) save.Author {
	if ok {
		return a
	}
	return c.cfg.Fallback
}
