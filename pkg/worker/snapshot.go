package worker

import (
	"errors"

	"github.com/gitsave/gitsave/pkg/git"
)

// RemoteHealth classifies the last remote error, for status conditions.
type RemoteHealth string

const (
	// RemoteConnecting: the repository has not been opened yet.
	RemoteConnecting RemoteHealth = "Connecting"
	// RemoteOK: the last open, fetch or push worked.
	RemoteOK RemoteHealth = "OK"
	// RemoteAuthDenied: credentials are missing, wrong or not allowed.
	RemoteAuthDenied RemoteHealth = "AuthDenied"
	// RemoteUnreachable: any other failure (network, server, refused push).
	RemoteUnreachable RemoteHealth = "Unreachable"
)

// Snapshot is a worker's state for GitTarget/GitProvider status. It is a copy:
// safe to keep and read from any goroutine.
type Snapshot struct {
	URL, Branch string
	Health      RemoteHealth
	// LastPushedSHA is the branch head this worker last pushed ("" if none yet).
	LastPushedSHA string
	// RemoteSHA is the remote branch head as last seen.
	RemoteSHA string
	// UnpushedWrites counts finalized writes not on the remote yet, per target.
	UnpushedWrites map[string]int
	// OpenWindowAuthor and OpenWindowTarget describe the open window, if any.
	OpenWindowAuthor, OpenWindowTarget string
	// LastPushError is the last remote error while it is not cured.
	LastPushError string
	// PendingRequests counts requests not resolved yet.
	PendingRequests int
}

// Unpushed is the number of unpushed writes of one target.
func (s Snapshot) Unpushed(target string) int { return s.UnpushedWrites[target] }

// Snapshot returns the state as of the last handled item.
func (w *Worker) Snapshot() Snapshot {
	w.snapMu.Lock()
	defer w.snapMu.Unlock()
	s := w.snap
	s.UnpushedWrites = make(map[string]int, len(w.snap.UnpushedWrites))
	for k, v := range w.snap.UnpushedWrites {
		s.UnpushedWrites[k] = v
	}
	return s
}

func (w *Worker) publish() {
	s := Snapshot{
		URL:             w.cfg.URL,
		Branch:          w.cfg.Branch,
		LastPushedSHA:   w.lastPushedSHA,
		UnpushedWrites:  map[string]int{},
		PendingRequests: len(w.requests),
	}
	if !w.remoteTip.IsZero() {
		s.RemoteSHA = w.remoteTip.String()
	}
	for _, pw := range w.pending {
		s.UnpushedWrites[pw.target]++
	}
	if win := w.window; win != nil {
		s.OpenWindowAuthor, s.OpenWindowTarget = win.author.Username, win.target
	}
	switch err := w.remote.lastErr; {
	case err != nil && errors.Is(err, git.ErrAuth):
		s.Health, s.LastPushError = RemoteAuthDenied, err.Error()
	case err != nil:
		s.Health, s.LastPushError = RemoteUnreachable, err.Error()
	case w.repo == nil:
		s.Health = RemoteConnecting
	default:
		s.Health = RemoteOK
	}
	w.snapMu.Lock()
	w.snap = s
	w.snapMu.Unlock()
}
