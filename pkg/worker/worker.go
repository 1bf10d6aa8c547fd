// Package worker holds the branch workers: one per (repository URL, branch),
// each with one goroutine and one FIFO. Resource events, CommitRequest attach
// and cancel, timer ticks, resync batches, target configuration and stop are
// all items on that FIFO, so the worker's state needs no locks. Timers only
// enqueue a tick; the tick re-reads which deadlines are due.
//
// The package knows nothing about HTTP or the API server: requests come in as
// save.Request and every transition goes out through save.Reporter.
package worker

import (
	"errors"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/save"
)

// Config configures a Worker. URL, Branch, Open and Reporter are required.
type Config struct {
	URL, Branch string
	// Open opens the repository; called on the worker goroutine at start and
	// after a permanent remote error.
	Open     Opener
	Reporter save.Reporter
	// Clock drives every timer (default: the real clock).
	Clock clock.WithDelayedExecution
	// SettleTimeout is how long a request's barrier waits for edits that were
	// admitted but never show up (default 2s).
	SettleTimeout time.Duration
	// RemoteTimeout bounds one open, fetch or push (default 30s).
	RemoteTimeout time.Duration
	// BackoffMin and BackoffMax bound the retry delay after remote failures
	// (default 1s and 60s).
	BackoffMin, BackoffMax time.Duration
	// MaxPushAttempts is how many remote failures in a row a waiting request
	// sits through (AwaitingPush) before it resolves PushFailed (default 10).
	// An auth error resolves it at once. Writes are never dropped.
	MaxPushAttempts int
	// ResolvedRetention is how long a resolved outcome answers a re-sent
	// Attach (default 1h).
	ResolvedRetention time.Duration
	Logger            *logr.Logger
}

func (c *Config) setDefaults() {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.SettleTimeout <= 0 {
		c.SettleTimeout = 2 * time.Second
	}
	if c.RemoteTimeout <= 0 {
		c.RemoteTimeout = 30 * time.Second
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = time.Second
	}
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = max(60*time.Second, c.BackoffMin)
	}
	if c.MaxPushAttempts <= 0 {
		c.MaxPushAttempts = 10
	}
	if c.ResolvedRetention <= 0 {
		c.ResolvedRetention = time.Hour
	}
}

// Worker mirrors the GitTargets of one branch. Its methods are safe for
// concurrent use and return at once (except Stop and Sync).
type Worker struct {
	cfg   Config
	clock clock.WithDelayedExecution
	log   logr.Logger
	q     *fifo
	done  chan struct{}

	snapMu sync.Mutex
	snap   Snapshot

	// Everything below is owned by the worker goroutine.
	targets  map[string]*TargetConfig
	window   *window
	pending  []*pendingWrite
	requests map[types.UID]*request
	resolved map[types.UID]resolvedOutcome
	seenKeys map[save.EditKey]time.Time
	seq      uint64

	repo          Repository
	remote        remoteState
	remoteTip     plumbing.Hash
	lastPushedSHA string

	timer   clock.Timer
	timerAt time.Time
	syncs   []chan struct{}
}

// New starts a worker. It opens the repository on its own goroutine, so an
// unreachable remote does not fail New: edits are collected and committed
// once the repository opens.
func New(cfg Config) (*Worker, error) {
	if cfg.URL == "" || cfg.Branch == "" || cfg.Open == nil || cfg.Reporter == nil {
		return nil, errors.New("worker: URL, Branch, Open and Reporter are required")
	}
	cfg.setDefaults()
	log := klog.Background().WithName("worker")
	if cfg.Logger != nil {
		log = *cfg.Logger
	}
	w := &Worker{
		cfg:      cfg,
		clock:    cfg.Clock,
		log:      log.WithValues("url", cfg.URL, "branch", cfg.Branch),
		q:        newFIFO(),
		done:     make(chan struct{}),
		targets:  map[string]*TargetConfig{},
		requests: map[types.UID]*request{},
		resolved: map[types.UID]resolvedOutcome{},
		seenKeys: map[save.EditKey]time.Time{},
	}
	w.snap = Snapshot{URL: cfg.URL, Branch: cfg.Branch}
	w.q.add(tickItem{}) // first item: open the repository
	go w.run()
	return w, nil
}

// Submit queues an observed edit. The worker keeps ev.Content: do not modify it.
func (w *Worker) Submit(ev Event) { w.q.add(ev) }

// Resync queues a target's live state. The worker keeps the map.
func (w *Worker) Resync(b ResyncBatch) { w.q.add(b) }

// SetTarget adds or updates a target served by this worker.
func (w *Worker) SetTarget(tc TargetConfig) { w.q.add(tc) }

// RemoveTarget stops serving a target: its open window is dropped and its
// requests that are not committed yet resolve TargetDeleted. Writes already
// finalized are still pushed.
func (w *Worker) RemoveTarget(name string) { w.q.add(removeTargetItem{name: name}) }

// Attach hands a CommitRequest to the worker (idempotent per UID).
func (w *Worker) Attach(req save.Request) {
	if !w.q.add(attachItem{req: req}) {
		w.cfg.Reporter.Report(req.UID, save.Progress{Reason: v1alpha1.ReasonWorkerStopped, Branch: w.cfg.Branch})
	}
}

// Cancel detaches a deleted CommitRequest; its window keeps the edits.
func (w *Worker) Cancel(uid types.UID) { w.q.add(cancelItem{uid: uid}) }

// Stop finalizes the open window, tries a last push, resolves the remaining
// requests WorkerStopped and returns when the goroutine has ended.
func (w *Worker) Stop() {
	w.q.add(stopItem{})
	<-w.done
}

// Sync returns once every item queued before it, and every item those caused,
// has been handled: the worker is idle. Deadlines in the future are not
// waited for. Meant for tests, which drive a fake clock and then Sync.
func (w *Worker) Sync() {
	done := make(chan struct{})
	if !w.q.add(syncItem{done: done}) {
		<-w.done
		return
	}
	select {
	case <-done:
	case <-w.done:
	}
}

// Done is closed when the worker goroutine has ended.
func (w *Worker) Done() <-chan struct{} { return w.done }

var _ save.Saver = (*Worker)(nil)

func (w *Worker) run() {
	defer close(w.done)
	for {
		it, ok := w.q.pop()
		if !ok {
			return
		}
		if _, stop := it.(stopItem); stop {
			w.shutdown()
			return
		}
		w.handle(it)
		w.afterItem()
		if w.q.len() == 0 {
			for _, s := range w.syncs {
				close(s)
			}
			w.syncs = nil
		}
	}
}

func (w *Worker) handle(it any) {
	switch it := it.(type) {
	case Event:
		w.event(it)
	case ResyncBatch:
		w.resync(it)
	case TargetConfig:
		w.setTarget(it)
	case removeTargetItem:
		w.removeTarget(it.name)
	case attachItem:
		w.attach(it.req)
	case cancelItem:
		w.cancel(it.uid)
	case syncItem:
		w.syncs = append(w.syncs, it.done)
	case tickItem:
		// afterItem runs whatever is due.
	}
}

// afterItem runs what is due now, talks to the remote if needed, publishes
// the snapshot and re-arms the one timer for the next deadline.
func (w *Worker) afterItem() {
	now := w.clock.Now()
	w.expireRequests(now)
	w.expireWindow(now)
	w.maybeConnect(now)
	w.maybePush(w.clock.Now())
	w.publish()
	w.arm()
}

func (w *Worker) event(ev Event) {
	tc := w.targets[ev.Target]
	if tc == nil {
		w.log.V(1).Info("event for an unknown target dropped", "target", ev.Target, "path", ev.Path)
		return
	}
	if !underFolder(ev.Path, tc.Path) {
		w.log.Info("event outside the target folder dropped", "target", ev.Target, "path", ev.Path)
		return
	}
	now := w.clock.Now()
	if ev.Observed.IsZero() {
		ev.Observed = now
	}
	if win := w.window; win != nil && !win.belongsTo(ev.Author.Username, ev.Target) {
		w.finalize(v1alpha1.FinalizedByAuthorSwitch)
	}
	opened := false
	if w.window == nil {
		w.window, opened = newWindow(ev.Author, ev.Target, now), true
	}
	w.window.add(ev, now)
	if opened {
		w.bindWindow()
	}
	w.observeKey(ev.Key, ev.Observed)
	if w.window != nil && w.window.events >= tc.MaxWindowEvents {
		w.finalize(v1alpha1.FinalizedByBufferLimit)
	}
}

// expireWindow closes a window that has been silent for its target's
// CommitWindow.
func (w *Worker) expireWindow(now time.Time) {
	if at, ok := w.silenceAt(); ok && !now.Before(at) {
		w.finalize(v1alpha1.FinalizedBySilenceTimer)
	}
}

func (w *Worker) silenceAt() (time.Time, bool) {
	if w.window == nil {
		return time.Time{}, false
	}
	tc := w.targets[w.window.target]
	if tc == nil || tc.CommitWindow <= 0 {
		return time.Time{}, false
	}
	return w.window.lastEventAt.Add(tc.CommitWindow), true
}

func (w *Worker) setTarget(tc TargetConfig) {
	if tc.MaxWindowEvents <= 0 {
		tc.MaxWindowEvents = DefaultMaxWindowEvents
	}
	if tc.AuthorEmailTemplate == "" {
		tc.AuthorEmailTemplate = DefaultAuthorEmailTemplate
	}
	if tc.Committer.Name == "" {
		tc.Committer.Name = "gitsave"
	}
	if tc.Committer.Email == "" {
		tc.Committer.Email = "gitsave@noreply.gitsave.dev"
	}
	w.targets[tc.Name] = &tc
}

// removeTarget drops the target's open window (the target is no longer
// mirrored) and resolves its uncommitted requests TargetDeleted.
func (w *Worker) removeTarget(name string) {
	if w.targets[name] == nil {
		return
	}
	if w.window != nil && w.window.target == name {
		w.log.Info("target removed: open window dropped", "target", name, "author", w.window.author.Username, "events", w.window.events)
		w.window = nil
	}
	for _, r := range w.ordered() {
		if r.target == name && r.state != stateAwaitingPush {
			w.resolve(r, save.Progress{Reason: v1alpha1.ReasonTargetDeleted})
		}
	}
	delete(w.targets, name)
}

// shutdown is the stop item: finalize, one last push, then WorkerStopped for
// whatever could not finish. Later items are answered as stopped.
func (w *Worker) shutdown() {
	w.finalize(v1alpha1.FinalizedByShutdown)
	if w.repo == nil {
		w.connect()
	}
	if w.repo != nil && w.hasCommitted() {
		w.push()
	}
	msg := ""
	if err := w.remote.lastErr; err != nil {
		msg = err.Error()
	}
	for _, r := range w.ordered() {
		w.resolve(r, save.Progress{Reason: v1alpha1.ReasonWorkerStopped, Message: msg})
	}
	if n := len(w.pending); n > 0 {
		w.log.Info("stopped with unpushed writes; the next resync restores them", "writes", n)
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.repo != nil {
		_ = w.repo.Close()
		w.repo = nil
	}
	w.publish()
	w.q.close()
	for {
		it, ok := w.q.pop()
		if !ok {
			break
		}
		switch it := it.(type) {
		case attachItem:
			w.cfg.Reporter.Report(it.req.UID, save.Progress{Reason: v1alpha1.ReasonWorkerStopped, Branch: w.cfg.Branch})
		case syncItem:
			close(it.done)
		}
	}
	for _, s := range w.syncs {
		close(s)
	}
	w.syncs = nil
}

// arm keeps one timer on the earliest deadline; when it fires it only
// enqueues a tick.
func (w *Worker) arm() {
	next := w.nextDeadline()
	if next.IsZero() {
		if w.timer != nil {
			w.timer.Stop()
			w.timer, w.timerAt = nil, time.Time{}
		}
		return
	}
	if w.timer != nil && next.Equal(w.timerAt) {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	d := max(next.Sub(w.clock.Now()), time.Millisecond)
	w.timerAt = next
	w.timer = w.clock.AfterFunc(d, func() { w.q.add(tickItem{}) })
}

func (w *Worker) nextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if at, ok := w.silenceAt(); ok {
		consider(at)
	}
	for _, r := range w.requests {
		switch r.state {
		case stateWaitingForEdits:
			consider(r.settleAt)
		case stateWaitingForWindow, stateAttached:
			consider(r.deadline)
		}
	}
	if w.repo == nil || w.hasCommitted() {
		consider(w.remote.nextAt)
	}
	return next
}
