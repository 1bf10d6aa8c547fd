package worker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/git"
	"github.com/gitsave/gitsave/pkg/save"
)

// Transient push failures keep every write; waiting requests show
// AwaitingPush with the error, then Committed once a retry lands.
func TestTransientPushFailureKeepsWritesUntilRecovery(t *testing.T) {
	e := newEnv(t)
	e.faults.failPush(errTransient, errTransient, errTransient)
	e.edit("bob", "b", "bob") // a write without a request, finalized below
	e.edit("jane", "a", "jane")
	req := e.request("save", "jane", "Survives the outage", 0)
	e.w.Attach(req)
	e.sync()

	last := e.rep.last(req.UID)
	assert.Equal(t, v1alpha1.ReasonAwaitingPush, last.Reason)
	assert.NotEmpty(t, last.Message, "the push error is shown while retrying")
	s := e.w.Snapshot()
	assert.Equal(t, 2, s.Unpushed(testTarget))
	assert.Equal(t, RemoteUnreachable, s.Health)
	assert.NotEmpty(t, s.LastPushError)

	e.step(time.Second)     // 2nd attempt fails
	e.step(2 * time.Second) // 3rd attempt fails
	assert.Equal(t, v1alpha1.ReasonAwaitingPush, e.rep.last(req.UID).Reason)
	e.step(4 * time.Second) // 4th attempt lands

	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, e.head(), out.SHA)
	assert.Len(t, e.log(), 2, "bob's write and jane's write")
	s = e.w.Snapshot()
	assert.Equal(t, 0, s.Unpushed(testTarget))
	assert.Equal(t, RemoteOK, s.Health)
	assert.Equal(t, e.head(), s.LastPushedSHA)
}

// The pushed objects are written to the local cache only after the Save is
// reported, and a cache that cannot be written fails nothing: the request is
// Committed and the next push persists again.
func TestPersistAfterReportAndItsFailureIsHarmless(t *testing.T) {
	e := newEnv(t)
	e.faults.failPersist(errors.New("no space left on device"))
	var atPersist []string
	var req save.Request
	e.faults.onPersist = func() { atPersist = append(atPersist, e.rep.last(req.UID).Reason) }

	e.edit("jane", "a", "jane")
	req = e.request("save", "jane", "First", 0)
	e.w.Attach(req)
	e.sync()
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, e.head(), out.SHA)

	e.edit("jane", "b", "jane")
	req = e.request("again", "jane", "Second", 0)
	e.w.Attach(req)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonCommitted, e.rep.terminal(t, req.UID).Reason)
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	assert.Equal(t, []string{v1alpha1.ReasonCommitted, v1alpha1.ReasonCommitted}, atPersist,
		"each Persist runs after its push was reported")
	assert.Empty(t, e.faults.persist, "the failure was injected")
	assert.Len(t, e.log(), 2)
}

// Backoff doubles up to the cap: no attempt before it is due.
func TestPushBackoffIsCapped(t *testing.T) {
	e := newEnv(t)
	for range 9 {
		e.faults.failPush(errTransient)
	}
	e.edit("jane", "a", "v1")
	e.step(testWindow) // 1st attempt fails
	require.Equal(t, 1, e.faults.attemptCount())
	for i, d := range []time.Duration{1, 2, 4, 8, 16, 32, 60, 60} {
		e.step(d*time.Second - time.Millisecond)
		require.Equal(t, i+1, e.faults.attemptCount(), "no attempt before the backoff is over")
		e.step(time.Millisecond)
		require.Equal(t, i+2, e.faults.attemptCount())
	}
	// Attempts 2..9 failed on schedule; the 10th is due 60s later.
	assert.Empty(t, e.head())
	e.step(60 * time.Second)
	assert.NotEmpty(t, e.head())
}

// An auth error resolves waiting requests PushFailed (Stalled) at once, keeps
// the write, and reopens the repository so fixed credentials are picked up;
// the write lands when the remote accepts it again.
func TestAuthErrorResolvesPushFailedButKeepsWrite(t *testing.T) {
	e := newEnv(t)
	e.faults.failPush(fmt.Errorf("push: %w", git.ErrAuth))
	e.edit("jane", "a", "v1")
	req := e.request("save", "jane", "Denied", 0)
	e.w.Attach(req)
	e.sync()

	assert.Equal(t, v1alpha1.ReasonPushFailed, e.rep.terminal(t, req.UID).Reason)
	s := e.w.Snapshot()
	assert.Equal(t, RemoteAuthDenied, s.Health)
	assert.Equal(t, 1, s.Unpushed(testTarget))

	e.step(time.Second) // reopen, replay, push
	assert.Len(t, e.log(), 1)
	assert.Equal(t, "Denied", MessageWithoutTrailers(e.log()[0].Message))
	assert.Equal(t, 0, e.w.Snapshot().Unpushed(testTarget))
	e.rep.terminal(t, req.UID) // still exactly one outcome
}

// After MaxPushAttempts failures in a row a waiting request gives up
// (PushFailed); the write is still pushed later.
func TestRepeatedFailuresResolvePushFailed(t *testing.T) {
	e := newEnv(t, withMaxPushAttempts(3))
	e.faults.failPush(errTransient, errTransient, errTransient)
	e.edit("jane", "a", "v1")
	req := e.request("save", "jane", "Patience", 0)
	e.w.Attach(req)
	e.step(time.Second)
	assert.Equal(t, v1alpha1.ReasonAwaitingPush, e.rep.last(req.UID).Reason)
	e.step(2 * time.Second)
	assert.Equal(t, v1alpha1.ReasonPushFailed, e.rep.terminal(t, req.UID).Reason)
	e.step(4 * time.Second)
	assert.Len(t, e.log(), 1)
}

// A remote that cannot be opened at start: edits are still collected, the
// request waits in AwaitingPush with the error, and everything lands once
// the repository opens.
func TestRemoteUnavailableAtStart(t *testing.T) {
	e := newEnv(t, withOpenFailures(errTransient, errTransient))
	assert.Equal(t, RemoteUnreachable, e.w.Snapshot().Health)
	e.edit("jane", "a", "v1")
	req := e.request("save", "jane", "Early save", 0)
	e.w.Attach(req)
	e.sync()
	last := e.rep.last(req.UID)
	assert.Equal(t, v1alpha1.ReasonAwaitingPush, last.Reason)
	assert.NotEmpty(t, last.Message)

	e.step(time.Second)     // 2nd open fails
	e.step(2 * time.Second) // opens, commits, pushes
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, e.head(), out.SHA)
}

// Stop finalizes the open window (Shutdown), pushes it, and resolves what
// cannot finish WorkerStopped; later attaches are answered WorkerStopped.
func TestStopFinalizesPushesAndStopsTheRest(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	attached := e.request("attached", "jane", "Saved at shutdown", time.Minute)
	waiting := e.request("waiting", "bob", "Bob's save", time.Minute)
	e.w.Attach(attached)
	e.w.Attach(waiting)
	e.w.Stop()

	out := e.rep.terminal(t, attached.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, v1alpha1.FinalizedByShutdown, out.FinalizedBy)
	assert.Equal(t, e.head(), out.SHA)
	assert.Equal(t, v1alpha1.ReasonWorkerStopped, e.rep.terminal(t, waiting.UID).Reason)

	late := e.request("late", "jane", "Too late", 0)
	e.w.Attach(late)
	assert.Equal(t, v1alpha1.ReasonWorkerStopped, e.rep.terminal(t, late.UID).Reason)
	e.w.Sync() // returns on a stopped worker
}

func TestStopWithRemoteDownResolvesWorkerStopped(t *testing.T) {
	e := newEnv(t)
	e.faults.failPush(errTransient, errTransient)
	e.edit("jane", "a", "v1")
	req := e.request("save", "jane", "Lost push", time.Minute)
	e.w.Attach(req)
	e.w.Stop()
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonWorkerStopped, out.Reason)
	assert.Empty(t, e.head())
}
