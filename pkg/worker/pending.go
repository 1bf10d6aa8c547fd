package worker

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/git"
	"github.com/gitsave/gitsave/pkg/save"
)

// writeState says whether a pending write exists as a local commit. Writes go
// back to uncommitted when the local branch is reset onto the remote (replay)
// or the repository is reopened; committing them again gives new SHAs.
type writeState int

const (
	writeUncommitted writeState = iota + 1
	writeCommitted
)

// pendingWrite is a finalized window (or a resync) kept until it is on the
// remote. It holds everything needed to commit it again after a replay.
type pendingWrite struct {
	target string
	// changes of a window; nil for a resync, whose changes are computed at
	// commit time against the then-current tip.
	changes []git.Change
	resync  *resyncSpec

	message           string // final message (trailers included); "" for a resync
	author, committer git.Identity
	finalizedBy       string
	request           *request // resolved Committed once this write is pushed

	state        writeState
	sha          plumbing.Hash
	filesChanged int
}

// resyncSpec is the desired content of a target's folder.
type resyncSpec struct {
	folder  string
	desired map[string][]byte
}

// finalize is the ONE function that closes the open window, whatever the
// reason (ARCHITECTURE §4): silence, author/target switch, buffer limit,
// resync, the attached request's deadline, shutdown. The attached request's
// message wins over the generated one, and the request travels on the write.
func (w *Worker) finalize(by string) {
	win := w.window
	if win == nil {
		return
	}
	w.window = nil
	tc := w.targets[win.target]
	changes := win.changes()
	pw := &pendingWrite{
		target:      win.target,
		changes:     changes,
		author:      authorIdentity(tc, win.author),
		committer:   tc.Committer,
		finalizedBy: by,
		state:       writeUncommitted,
		message:     generatedMessage(windowSubject(win.author.Username, len(changes)), changes),
	}
	r := win.request
	if r != nil {
		msg := r.req.Message
		if msg == "" {
			msg = pw.message
		}
		pw.message = requestMessage(msg, r.req.Namespace, r.req.Name, string(r.req.UID))
		pw.request, r.write = r, pw
		r.state, r.barrier = stateAwaitingPush, nil
	}
	w.pending = append(w.pending, pw)
	w.commitPending()
	// A write that changed nothing resolved its request AlreadyPresent above,
	// without ever waiting for a push.
	if r != nil && r.state == stateAwaitingPush {
		w.report(r)
		// A Save is pushed at once. After an auth error, retry now rather than
		// after the backoff: a denial is answered fast, and the Secret may have
		// been fixed. (Transient failures keep their backoff: an unreachable
		// remote may hold the loop until RemoteTimeout.)
		if errors.Is(w.remote.lastErr, git.ErrAuth) {
			w.remote.nextAt = time.Time{}
		}
	}
}

// resync commits the live state of a target's folder, after finalizing the
// open window so the window's older edits cannot land on top of it.
func (w *Worker) resync(b ResyncBatch) {
	tc := w.targets[b.Target]
	if tc == nil {
		w.log.Info("resync for an unknown target dropped", "target", b.Target)
		return
	}
	w.finalize(v1alpha1.FinalizedByResync)
	desired := make(map[string][]byte, len(b.Desired))
	for p, c := range b.Desired {
		if !underFolder(p, tc.Path) {
			w.log.Info("resync path outside the target folder dropped", "target", b.Target, "path", p)
			continue
		}
		if c == nil {
			c = []byte{}
		}
		desired[p] = c
	}
	w.pending = append(w.pending, &pendingWrite{
		target:      b.Target,
		resync:      &resyncSpec{folder: tc.Path, desired: desired},
		author:      tc.Committer,
		committer:   tc.Committer,
		finalizedBy: v1alpha1.FinalizedByResync,
		state:       writeUncommitted,
	})
	w.commitPending()
}

// commitPending commits, in order, every write that is not a local commit yet.
// A write that changes nothing is dropped and its request resolves
// AlreadyPresent; a write Git refuses is dropped with CommitFailed.
func (w *Worker) commitPending() {
	if w.repo == nil {
		return
	}
	kept := w.pending[:0]
	for _, pw := range w.pending {
		if pw.state == writeCommitted {
			kept = append(kept, pw)
			continue
		}
		changed, err := w.commitWrite(pw)
		switch {
		case err != nil:
			w.log.Error(err, "commit failed; write dropped", "target", pw.target)
			if r := pw.request; r != nil {
				w.resolve(r, save.Progress{Reason: v1alpha1.ReasonCommitFailed, Message: err.Error(), FinalizedBy: pw.finalizedBy})
			}
		case !changed:
			if r := pw.request; r != nil {
				w.resolve(r, save.Progress{Reason: v1alpha1.ReasonAlreadyPresent, FinalizedBy: pw.finalizedBy})
			}
		default:
			kept = append(kept, pw)
		}
	}
	clear(w.pending[len(kept):])
	w.pending = kept
}

func (w *Worker) commitWrite(pw *pendingWrite) (bool, error) {
	changes, msg := pw.changes, pw.message
	if pw.resync != nil {
		var err error
		if changes, err = w.resyncChanges(pw.resync); err != nil {
			return false, err
		}
		if len(changes) == 0 {
			return false, nil
		}
		msg = generatedMessage(resyncSubject(pw.target, len(changes)), changes)
	}
	res, err := w.repo.Commit(changes, pw.author, pw.committer, w.clock.Now(), msg)
	if err != nil {
		return false, err
	}
	if !res.Changed {
		return false, nil
	}
	pw.state, pw.sha, pw.filesChanged = writeCommitted, res.SHA, res.FilesChanged
	return true, nil
}

// resyncChanges is the difference between the desired folder and the tip.
func (w *Worker) resyncChanges(rs *resyncSpec) ([]git.Change, error) {
	have, err := w.repo.ListFiles(rs.folder)
	if err != nil {
		return nil, err
	}
	var out []git.Change
	for p, c := range rs.desired {
		if h, ok := have[p]; !ok || h != git.BlobHash(c) {
			out = append(out, git.Change{Path: p, Content: c})
		}
	}
	for p := range have {
		if _, ok := rs.desired[p]; !ok {
			out = append(out, git.Change{Path: p, Delete: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// hasCommitted reports whether there are local commits to push.
func (w *Worker) hasCommitted() bool {
	for _, pw := range w.pending {
		if pw.state == writeCommitted {
			return true
		}
	}
	return false
}

// uncommitAll marks every write for replay (after a reset or a reopen).
func (w *Worker) uncommitAll() {
	for _, pw := range w.pending {
		pw.state, pw.sha, pw.filesChanged = writeUncommitted, plumbing.ZeroHash, 0
	}
}

// authorIdentity is the Git author of a window: the username, and an email
// from the target's template.
func authorIdentity(tc *TargetConfig, a save.Author) git.Identity {
	if a.Username == "" {
		return tc.Committer
	}
	return git.Identity{Name: a.Username, Email: strings.ReplaceAll(tc.AuthorEmailTemplate, "{username}", a.Username)}
}

// underFolder reports whether a repository path lies in folder ("" = root).
func underFolder(path, folder string) bool {
	folder = strings.Trim(folder, "/")
	return folder == "" || strings.HasPrefix(path, folder+"/")
}
