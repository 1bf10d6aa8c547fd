package worker

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/save"
)

// requestState is where a CommitRequest is on this worker (ARCHITECTURE §4):
//
//	attach ──► WaitingForEdits ──(barrier seen or settle timeout)──► WaitingForWindow | Attached
//	attach ──► WaitingForWindow ──(its author+target window opens)──► Attached
//	Attached ──(any finalize: CloseDelay, silence, switch, buffer, resync, shutdown)──► AwaitingPush
//	AwaitingPush ──(its write is pushed)──► Committed (its own write's SHA)
//
// Other terminal edges: the finalize changes nothing → AlreadyPresent (never
// AwaitingPush); Git refuses the commit → CommitFailed; deadline while
// WaitingForWindow → WindowMismatch (someone else's window is open) or
// NoWindowInGrace; auth error or MaxPushAttempts failures → PushFailed;
// target removed before the write → TargetDeleted; Stop → WorkerStopped.
//
// A request in WaitingForEdits is already bound to its author's open window
// if there is one, so a cut-off keeps its message; the barrier only holds its
// own deadline-driven finalize.
type requestState int

const (
	stateWaitingForEdits requestState = iota + 1
	stateWaitingForWindow
	stateAttached
	stateAwaitingPush
	stateResolved
)

func (s requestState) String() string {
	switch s {
	case stateWaitingForEdits:
		return v1alpha1.ReasonWaitingForEdits
	case stateWaitingForWindow:
		return v1alpha1.ReasonWaitingForWindow
	case stateAttached:
		return "Attached"
	case stateAwaitingPush:
		return v1alpha1.ReasonAwaitingPush
	case stateResolved:
		return "Resolved"
	}
	return "Unknown"
}

// request is a CommitRequest held by the worker until it resolves.
type request struct {
	req    save.Request
	target string // namespaced GitTarget key
	seq    uint64 // attach order: the oldest waiting request binds first
	state  requestState

	deadline time.Time // Received + CloseDelay: the finalize moment
	settleAt time.Time // the barrier gives up waiting here
	barrier  map[save.EditKey]struct{}

	write *pendingWrite // set from finalize on (AwaitingPush)
	last  save.Progress // last report, so repeats are not sent again
}

// resolvedOutcome is kept for a while so a re-sent Attach gets the same answer.
type resolvedOutcome struct {
	progress save.Progress
	at       time.Time
}

// keyMemory is how long an observed edit key can satisfy a barrier of a
// request attached after it (the event and the attach race on the FIFO).
const keyMemory = 2 * time.Minute

func requestTarget(req save.Request) string { return req.Namespace + "/" + req.Target }

// attach registers a request (idempotent per UID: the first deadline wins).
func (w *Worker) attach(req save.Request) {
	now := w.clock.Now()
	w.pruneResolved(now)
	if out, ok := w.resolved[req.UID]; ok {
		w.cfg.Reporter.Report(req.UID, out.progress)
		return
	}
	if r, ok := w.requests[req.UID]; ok {
		w.sendReport(r, w.progressOf(r), true)
		return
	}
	w.seq++
	r := &request{
		req:      req,
		target:   requestTarget(req),
		seq:      w.seq,
		deadline: req.Received.Add(req.CloseDelay),
		settleAt: now.Add(w.cfg.SettleTimeout),
	}
	w.requests[req.UID] = r
	if w.targets[r.target] == nil {
		w.resolve(r, save.Progress{Reason: v1alpha1.ReasonTargetDeleted, Message: "GitTarget " + r.target + " is not served by this worker"})
		return
	}
	for _, k := range req.Barrier {
		if seen, ok := w.seenKeys[k]; ok && !seen.Before(req.Received) {
			continue // observed after the request was received: already in
		}
		if r.barrier == nil {
			r.barrier = map[save.EditKey]struct{}{}
		}
		r.barrier[k] = struct{}{}
	}
	r.state = stateWaitingForWindow
	if len(r.barrier) > 0 {
		r.state = stateWaitingForEdits
	}
	w.bindWindow()
	w.report(r)
}

// cancel forgets a request whose object was deleted. The window keeps its
// edits; a write already made keeps its message.
func (w *Worker) cancel(uid types.UID) {
	delete(w.resolved, uid)
	r, ok := w.requests[uid]
	if !ok {
		return
	}
	delete(w.requests, uid)
	r.state = stateResolved
	if w.window != nil && w.window.request == r {
		w.window.request = nil
		w.bindWindow() // the next waiting request of this author may take it
	}
	if r.write != nil {
		r.write.request = nil
	}
}

// bindWindow attaches the oldest unbound request of the window's author and
// target to the open window, if the window carries none.
func (w *Worker) bindWindow() {
	win := w.window
	if win == nil || win.request != nil {
		return
	}
	var best *request
	for _, r := range w.requests {
		if r.state != stateWaitingForWindow && r.state != stateWaitingForEdits {
			continue
		}
		if !win.belongsTo(r.req.Author.Username, r.target) {
			continue
		}
		if best == nil || r.seq < best.seq {
			best = r
		}
	}
	if best == nil {
		return
	}
	win.request = best
	if best.state == stateWaitingForWindow {
		best.state = stateAttached
	}
	w.report(best)
}

// observeKey records an edit seen on the watch and releases the barriers it
// completes.
func (w *Worker) observeKey(k save.EditKey, observed time.Time) {
	if k == (save.EditKey{}) {
		return
	}
	if prev, ok := w.seenKeys[k]; !ok || observed.After(prev) {
		w.seenKeys[k] = observed
	}
	if len(w.seenKeys) > 4096 {
		w.pruneResolved(w.clock.Now())
	}
	for _, r := range w.ordered() {
		if r.state != stateWaitingForEdits {
			continue
		}
		if observed.Before(r.req.Received) {
			continue
		}
		for b := range r.barrier {
			if covers(b, k) {
				delete(r.barrier, b)
				break
			}
		}
		if len(r.barrier) == 0 {
			w.releaseBarrier(r)
		}
	}
}

// covers says whether an observed edit satisfies a barrier key. A key without a name
// is a create made with generateName, whose name was not known at admission: any
// object of that resource in that namespace satisfies it.
func covers(barrier, seen save.EditKey) bool {
	if barrier.Name == "" {
		barrier.Name = seen.Name
	}
	return barrier == seen
}

// releaseBarrier moves a request past WaitingForEdits: every edit was seen, or
// the settle timeout passed (a write that failed after admission never shows).
func (w *Worker) releaseBarrier(r *request) {
	r.barrier = nil
	if w.window != nil && w.window.request == r {
		r.state = stateAttached
	} else {
		r.state = stateWaitingForWindow
		w.bindWindow()
	}
	w.report(r)
}

// expireRequests runs the time-driven request transitions due at now.
func (w *Worker) expireRequests(now time.Time) {
	for _, r := range w.ordered() {
		if r.state == stateWaitingForEdits && !now.Before(r.settleAt) {
			w.releaseBarrier(r)
		}
	}
	for _, r := range w.ordered() {
		if now.Before(r.deadline) {
			continue
		}
		switch r.state {
		case stateAttached:
			w.finalize(v1alpha1.FinalizedByCloseDelay)
		case stateWaitingForWindow:
			w.resolveWithoutWindow(r)
		}
	}
}

// resolveWithoutWindow ends a request whose deadline passed with no window of
// its own. Another author's (or target's) window is never touched.
func (w *Worker) resolveWithoutWindow(r *request) {
	if win := w.window; win != nil && !win.belongsTo(r.req.Author.Username, r.target) {
		w.resolve(r, save.Progress{Reason: v1alpha1.ReasonWindowMismatch,
			Message: "the open window belongs to " + win.author.Username + " on " + win.target})
		return
	}
	w.resolve(r, save.Progress{Reason: v1alpha1.ReasonNoWindowInGrace})
}

// resolve ends a request with a terminal outcome.
func (w *Worker) resolve(r *request, p save.Progress) {
	if r.state == stateResolved {
		return
	}
	r.state = stateResolved
	delete(w.requests, r.req.UID)
	if w.window != nil && w.window.request == r {
		w.window.request = nil
	}
	if r.write != nil {
		r.write.request = nil
	}
	p.Branch = w.cfg.Branch
	w.resolved[r.req.UID] = resolvedOutcome{progress: p, at: w.clock.Now()}
	w.sendReport(r, p, false)
}

// report sends the request's in-progress state.
func (w *Worker) report(r *request) { w.sendReport(r, w.progressOf(r), false) }

func (w *Worker) sendReport(r *request, p save.Progress, force bool) {
	if !force && p == r.last {
		return
	}
	r.last = p
	w.cfg.Reporter.Report(r.req.UID, p)
}

// progressOf describes a request that is not resolved yet.
func (w *Worker) progressOf(r *request) save.Progress {
	p := save.Progress{Branch: w.cfg.Branch}
	switch r.state {
	case stateWaitingForEdits:
		p.Reason = v1alpha1.ReasonWaitingForEdits
	case stateWaitingForWindow:
		p.Reason = v1alpha1.ReasonWaitingForWindow
	case stateAttached:
		p.Reason = v1alpha1.ReasonWaitingForCloseDelay
	case stateAwaitingPush:
		p.Reason = v1alpha1.ReasonAwaitingPush
		if r.write != nil {
			p.FinalizedBy = r.write.finalizedBy
		}
		if err := w.remote.lastErr; err != nil {
			p.Message = err.Error()
		}
	default:
		return r.last
	}
	return p
}

// ordered lists the live requests in attach order, so transitions and reports
// do not depend on map iteration.
func (w *Worker) ordered() []*request {
	out := make([]*request, 0, len(w.requests))
	for _, r := range w.requests {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func (w *Worker) pruneResolved(now time.Time) {
	for uid, out := range w.resolved {
		if now.Sub(out.at) > w.cfg.ResolvedRetention {
			delete(w.resolved, uid)
		}
	}
	for k, at := range w.seenKeys {
		if now.Sub(at) > keyMemory {
			delete(w.seenKeys, k)
		}
	}
}
