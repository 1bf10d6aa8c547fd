package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/git"
	"github.com/gitsave/gitsave/pkg/save"
)

// Pushes run inline on the worker goroutine, each bounded by RemoteTimeout.
// The Repo is not safe for concurrent use, and a push moves the remote tip to
// the local tip: a commit made by the loop while a helper goroutine pushed
// would be recorded as pushed without having been sent. Inline keeps the
// ordering trivially right; while a push runs, producers still enqueue
// without blocking (the FIFO is unbounded), and Attach/Cancel return at once.
//
// Every write is pushed as soon as it is committed (a Save must not wait for a
// batching cooldown); writes finalized while a push was running are pushed
// together by the next one.

// maxReplays bounds the fetch-reset-replay rounds of one push attempt; past
// it the remote is treated as failing and retried with backoff.
const maxReplays = 3

// remoteState tracks consecutive failures to open, fetch or push.
type remoteState struct {
	failures int
	nextAt   time.Time // no attempt before this (backoff)
	lastErr  error
}

func (w *Worker) backoff(failures int) time.Duration {
	d := w.cfg.BackoffMin
	for i := 1; i < failures && d < w.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, w.cfg.BackoffMax)
}

func (w *Worker) remoteCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), w.cfg.RemoteTimeout)
}

// maybeConnect opens the repository when there is none and backoff allows.
func (w *Worker) maybeConnect(now time.Time) {
	if w.repo != nil || now.Before(w.remote.nextAt) {
		return
	}
	w.connect()
}

func (w *Worker) connect() {
	ctx, cancel := w.remoteCtx()
	defer cancel()
	repo, err := w.cfg.Open(ctx)
	if err != nil {
		w.remoteFailed(fmt.Errorf("open %s: %w", w.cfg.URL, err))
		return
	}
	w.repo = repo
	w.remoteTip = repo.RemoteTip()
	w.uncommitAll()
	w.commitPending() // writes finalized while we had no repository
	if !w.hasCommitted() {
		w.remote = remoteState{}
	}
}

// maybePush pushes committed writes when backoff allows.
func (w *Worker) maybePush(now time.Time) {
	if w.repo == nil || !w.hasCommitted() || now.Before(w.remote.nextAt) {
		return
	}
	w.push()
}

// push is one attempt: compare-and-swap the remote branch; when someone else
// moved it, fetch, reset onto it, replay our writes (new SHAs) and try again.
func (w *Worker) push() {
	for round := 0; ; round++ {
		ctx, cancel := w.remoteCtx()
		sha, err := w.repo.Push(ctx)
		cancel()
		if err == nil {
			w.pushed(sha)
			// After reporting: the Saves do not wait for the disk cache. A
			// failure loses nothing (the objects stay in memory, retried).
			if err := w.repo.Persist(); err != nil {
				w.log.Error(err, "could not write pushed objects to the local cache; will retry")
			}
			return
		}
		if !errors.Is(err, git.ErrRejected) || round == maxReplays {
			w.remoteFailed(err)
			return
		}
		w.log.V(1).Info("push rejected: replaying onto the remote head", "error", err.Error())
		if err := w.replay(); err != nil {
			w.remoteFailed(err)
			return
		}
		if !w.hasCommitted() {
			w.remote = remoteState{} // the remote already had all of it
			return
		}
	}
}

// replay rebuilds the unpushed writes on top of the remote head.
func (w *Worker) replay() error {
	ctx, cancel := w.remoteCtx()
	defer cancel()
	tip, err := w.repo.Fetch(ctx)
	if err != nil {
		return err
	}
	w.remoteTip = tip
	w.repo.ResetToRemote()
	w.uncommitAll()
	w.commitPending()
	return nil
}

// pushed resolves the requests of every write now on the remote, each with
// its own write's SHA (a later write may sit on top of it).
func (w *Worker) pushed(tip plumbing.Hash) {
	w.lastPushedSHA, w.remoteTip = tip.String(), tip
	kept := w.pending[:0]
	for _, pw := range w.pending {
		if pw.state != writeCommitted {
			kept = append(kept, pw)
			continue
		}
		if r := pw.request; r != nil {
			w.resolve(r, save.Progress{
				Reason:       v1alpha1.ReasonCommitted,
				SHA:          pw.sha.String(),
				FinalizedBy:  pw.finalizedBy,
				FilesChanged: pw.filesChanged,
			})
		}
	}
	clear(w.pending[len(kept):])
	w.pending = kept
	w.remote = remoteState{}
}

// remoteFailed keeps every write and schedules a retry with capped
// exponential backoff. Requests waiting on a write see the error; they give
// up (PushFailed, Stalled) on an auth error or after MaxPushAttempts failures
// in a row. Their writes are still kept and retried: when the remote comes
// back the commits land, with their trailers.
func (w *Worker) remoteFailed(err error) {
	w.remote.failures++
	w.remote.lastErr = err
	w.remote.nextAt = w.clock.Now().Add(w.backoff(w.remote.failures))
	auth := errors.Is(err, git.ErrAuth)
	giveUp := auth || w.remote.failures >= w.cfg.MaxPushAttempts
	w.log.Info("remote failed", "url", w.cfg.URL, "branch", w.cfg.Branch, "failures", w.remote.failures, "error", err.Error())
	for _, pw := range w.pending {
		r := pw.request
		if r == nil {
			continue
		}
		if giveUp {
			w.resolve(r, save.Progress{Reason: v1alpha1.ReasonPushFailed, Message: err.Error(), FinalizedBy: pw.finalizedBy})
		} else {
			w.report(r)
		}
	}
	if auth && w.repo != nil {
		// Credentials are read when the repository is opened: reopen, so a
		// fixed Secret is picked up. The writes are replayed after the reopen.
		_ = w.repo.Close()
		w.repo = nil
	}
}
