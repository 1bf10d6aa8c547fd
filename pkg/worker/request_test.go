package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
)

// UC1: a window is open, Save with no close delay commits it at once with the
// request's message, and Committed carries the pushed SHA.
func TestAttachToOpenWindowCommitsWithRequestMessage(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	e.sync()
	req := e.request("save", "jane", "Scale the widget", 0)
	e.w.Attach(req)
	e.sync()

	assert.Equal(t, []string{v1alpha1.ReasonWaitingForCloseDelay, v1alpha1.ReasonAwaitingPush, v1alpha1.ReasonCommitted},
		e.rep.reasons(req.UID))
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, e.head(), out.SHA)
	assert.Equal(t, "main", out.Branch)
	assert.Equal(t, v1alpha1.FinalizedByCloseDelay, out.FinalizedBy)
	assert.Equal(t, 1, out.FilesChanged)

	log := e.log()
	require.Len(t, log, 1)
	assert.Equal(t, "Scale the widget", MessageWithoutTrailers(log[0].Message))
	ref, u, ok := RequestTrailers(log[0].Message)
	require.True(t, ok)
	assert.Equal(t, "demo/save", ref)
	assert.Equal(t, string(req.UID), u)
	assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author)
	assert.Equal(t, "gitsave <gitsave@noreply.gitsave.dev>", log[0].Committer)
}

// UC2: the request comes first; the bundle's edits arrive during the close
// delay, join the window and land in one commit at the deadline.
func TestRequestFirstThenEditsJoinOneCommit(t *testing.T) {
	e := newEnv(t)
	req := e.request("bundle", "jane", "Roll out the bundle", 8*time.Second)
	e.w.Attach(req)
	e.sync()
	assert.Equal(t, []string{v1alpha1.ReasonWaitingForWindow}, e.rep.reasons(req.UID))

	e.step(time.Second)
	e.edit("jane", "a", "v1")
	e.edit("jane", "b", "v1")
	e.sync()
	assert.Equal(t, v1alpha1.ReasonWaitingForCloseDelay, e.rep.last(req.UID).Reason)
	assert.Empty(t, e.head(), "nothing is committed before the deadline")

	e.step(3 * time.Second)
	e.edit("jane", "c", "v1")
	e.step(4 * time.Second)

	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, v1alpha1.FinalizedByCloseDelay, out.FinalizedBy)
	assert.Equal(t, 3, out.FilesChanged)
	log := e.log()
	require.Len(t, log, 1)
	assert.Equal(t, out.SHA, log[0].SHA)
	assert.Equal(t, "Roll out the bundle", MessageWithoutTrailers(log[0].Message))
}

func TestNoWindowInGrace(t *testing.T) {
	e := newEnv(t)
	req := e.request("nothing", "jane", "Save", 5*time.Second)
	e.w.Attach(req)
	e.step(5 * time.Second)

	assert.Equal(t, []string{v1alpha1.ReasonWaitingForWindow, v1alpha1.ReasonNoWindowInGrace}, e.rep.reasons(req.UID))
	e.rep.terminal(t, req.UID)
	assert.Empty(t, e.head())
}

// Another author's window is never touched: the request resolves
// WindowMismatch, the window stays open and is committed later under its
// own author.
func TestWindowMismatchLeavesOtherAuthorsWindow(t *testing.T) {
	e := newEnv(t)
	e.edit("bob", "a", "bob's edit")
	e.sync()
	req := e.request("jane-save", "jane", "Jane's save", 0)
	e.w.Attach(req)
	e.sync()

	assert.Equal(t, v1alpha1.ReasonWindowMismatch, e.rep.terminal(t, req.UID).Reason)
	assert.Empty(t, e.head(), "bob's window must not be committed by jane's request")
	assert.Equal(t, "bob", e.w.Snapshot().OpenWindowAuthor)

	e.step(testWindow)
	log := e.log()
	require.Len(t, log, 1)
	assert.Equal(t, "bob <bob@users.noreply.gitsave.dev>", log[0].Author)
	_, _, hasTrailers := RequestTrailers(log[0].Message)
	assert.False(t, hasTrailers)
}

// A window carries one request; a second request of the same author waits
// for the next window, and each makes its own commit with its own message.
func TestTwoRequestsSameAuthorMakeTwoCommits(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	first := e.request("first", "jane", "First save", 10*time.Second)
	e.w.Attach(first)
	second := e.request("second", "jane", "Second save", 20*time.Second)
	e.w.Attach(second)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonWaitingForCloseDelay, e.rep.last(first.UID).Reason)
	assert.Equal(t, v1alpha1.ReasonWaitingForWindow, e.rep.last(second.UID).Reason)

	e.step(10 * time.Second)
	assert.Equal(t, v1alpha1.ReasonCommitted, e.rep.terminal(t, first.UID).Reason)
	assert.Equal(t, v1alpha1.ReasonWaitingForWindow, e.rep.last(second.UID).Reason)

	e.step(2 * time.Second)
	e.edit("jane", "b", "v1")
	e.sync()
	assert.Equal(t, v1alpha1.ReasonWaitingForCloseDelay, e.rep.last(second.UID).Reason)
	e.step(8 * time.Second)
	out := e.rep.terminal(t, second.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)

	log := e.log()
	require.Len(t, log, 2)
	assert.Equal(t, "Second save", MessageWithoutTrailers(log[0].Message))
	assert.Equal(t, "First save", MessageWithoutTrailers(log[1].Message))
	assert.Equal(t, e.rep.terminal(t, first.UID).SHA, log[1].SHA)
	assert.Equal(t, out.SHA, log[0].SHA)
}

// The second request's deadline passes while the first one holds the
// author's window: it has no window of its own.
func TestSecondRequestDeadlineWhileWindowClaimed(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	first := e.request("first", "jane", "First", 30*time.Second)
	second := e.request("second", "jane", "Second", 5*time.Second)
	e.w.Attach(first)
	e.w.Attach(second)
	e.step(5 * time.Second)
	assert.Equal(t, v1alpha1.ReasonNoWindowInGrace, e.rep.terminal(t, second.UID).Reason)
	e.step(25 * time.Second)
	assert.Equal(t, v1alpha1.ReasonCommitted, e.rep.terminal(t, first.UID).Reason)
}

// Cancel detaches the request; the window keeps its edits and is committed
// later with the generated message.
func TestCancelKeepsEdits(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	req := e.request("cancelled", "jane", "Never mind", 30*time.Second)
	e.w.Attach(req)
	e.sync()
	e.w.Cancel(req.UID)
	e.sync()
	assert.Equal(t, "jane", e.w.Snapshot().OpenWindowAuthor)

	e.step(testWindow)
	for _, r := range e.rep.reasons(req.UID) {
		assert.False(t, terminalReasons[r], "a cancelled request gets no outcome, got %s", r)
	}
	log := e.log()
	require.Len(t, log, 1)
	assert.Equal(t, "gitsave: 1 change by jane\n\n- "+path("a")+"\n", log[0].Message)
	got, ok := e.file("a")
	require.True(t, ok)
	assert.Equal(t, "v1", got)
}

// Cancel frees the window for the next waiting request of the same author.
func TestCancelLetsNextRequestAttach(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	first := e.request("first", "jane", "First", 30*time.Second)
	second := e.request("second", "jane", "Second", 10*time.Second)
	e.w.Attach(first)
	e.w.Attach(second)
	e.w.Cancel(first.UID)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonWaitingForCloseDelay, e.rep.last(second.UID).Reason)
	e.step(10 * time.Second)
	assert.Equal(t, v1alpha1.ReasonCommitted, e.rep.terminal(t, second.UID).Reason)
	assert.Equal(t, "Second", MessageWithoutTrailers(e.log()[0].Message))
}

// The barrier holds the finalize until the admitted edit is seen.
func TestBarrierWaitsForAdmittedEdit(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	e.sync()
	req := e.request("save", "jane", "With the late edit", 0, key("b"))
	e.w.Attach(req)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonWaitingForEdits, e.rep.last(req.UID).Reason)
	assert.Empty(t, e.head())

	e.edit("jane", "b", "v1")
	e.sync()
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, 2, out.FilesChanged, "the barrier edit is in the commit")
	assert.Equal(t, []string{v1alpha1.ReasonWaitingForEdits, v1alpha1.ReasonWaitingForCloseDelay,
		v1alpha1.ReasonAwaitingPush, v1alpha1.ReasonCommitted}, e.rep.reasons(req.UID))
}

// A create made with generateName is admitted before its name exists: its barrier
// key has no name, and any new object of that resource in the namespace meets it.
func TestBarrierGenerateNameKeyMetByAnyNameOfTheResource(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	e.sync()
	req := e.request("save", "jane", "With the generated one", 0, key(""))
	e.w.Attach(req)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonWaitingForEdits, e.rep.last(req.UID).Reason)

	e.edit("jane", "web-x7k2q", "v1")
	e.sync()
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, 2, out.FilesChanged, "the generated object is in the commit")
}

// An admitted write that never shows up (it failed after admission) holds
// the request only until the settle timeout.
func TestBarrierSettleTimeoutReleases(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	e.sync()
	req := e.request("save", "jane", "Save", 0, key("never"))
	e.w.Attach(req)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonWaitingForEdits, e.rep.last(req.UID).Reason)

	e.step(time.Second)
	assert.Equal(t, v1alpha1.ReasonWaitingForEdits, e.rep.last(req.UID).Reason)
	e.step(time.Second) // default settle timeout: 2s
	assert.Equal(t, v1alpha1.ReasonCommitted, e.rep.terminal(t, req.UID).Reason)
}

// An edit seen on the watch after the request was received, but queued ahead
// of the attach, already satisfies the barrier.
func TestBarrierKeySeenBeforeAttach(t *testing.T) {
	e := newEnv(t)
	req := e.request("save", "jane", "Save", 0, key("a"))
	e.edit("jane", "a", "v1")
	e.w.Attach(req)
	e.sync()
	assert.NotContains(t, e.rep.reasons(req.UID), v1alpha1.ReasonWaitingForEdits)
	assert.Equal(t, v1alpha1.ReasonCommitted, e.rep.terminal(t, req.UID).Reason)
}

// A cut-off while the barrier is still open keeps the message: the request is
// bound to its author's window from the start.
func TestBarrierRequestBoundEarlyKeepsMessageOnCutOff(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	req := e.request("save", "jane", "Bound early", 0, key("b"))
	e.w.Attach(req)
	e.edit("bob", "c", "v1") // author switch closes jane's window
	e.sync()
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, v1alpha1.FinalizedByAuthorSwitch, out.FinalizedBy)
	assert.Equal(t, "Bound early", MessageWithoutTrailers(e.log()[0].Message))
}

// Attach is idempotent per UID: the first deadline wins, and a re-send after
// resolution answers with the same outcome.
func TestAttachIsIdempotent(t *testing.T) {
	e := newEnv(t)
	req := e.request("save", "jane", "Save", 5*time.Second)
	e.w.Attach(req)
	e.step(3 * time.Second)
	again := req
	again.Received = e.clock.Now() // a re-send must not move the deadline
	e.w.Attach(again)
	e.step(2 * time.Second)
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonNoWindowInGrace, out.Reason)

	e.w.Attach(req)
	e.sync()
	all := e.rep.all(req.UID)
	assert.Equal(t, out, all[len(all)-1])
}

func TestTargetDeletedResolvesRequestsAndDropsWindow(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	attached := e.request("attached", "jane", "Save", 30*time.Second)
	waiting := e.request("waiting", "bob", "Save", 30*time.Second)
	e.w.Attach(attached)
	e.w.Attach(waiting)
	e.sync()
	e.w.RemoveTarget(testTarget)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonTargetDeleted, e.rep.terminal(t, attached.UID).Reason)
	assert.Equal(t, v1alpha1.ReasonTargetDeleted, e.rep.terminal(t, waiting.UID).Reason)
	assert.Empty(t, e.w.Snapshot().OpenWindowAuthor)

	late := e.request("late", "jane", "Save", 0)
	e.w.Attach(late)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonTargetDeleted, e.rep.terminal(t, late.UID).Reason)
	e.step(testWindow)
	assert.Empty(t, e.head())
}
