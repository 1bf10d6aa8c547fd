package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/git/gittest"
)

// Reference §8.3: a resync cuts the window before the request's deadline. The
// commit still carries the request's message; the push hits a conflict
// (someone else pushed), the write is replayed, and the request resolves
// Committed with the post-replay SHA, which is the remote head.
func TestResyncCutOffKeepsMessageAndReplayResolvesWithRemoteHead(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "jane v1")
	req := e.request("save", "jane", "Intent survives the cut", 30*time.Second)
	e.w.Attach(req)
	e.sync()
	require.Equal(t, v1alpha1.ReasonWaitingForCloseDelay, e.rep.last(req.UID).Reason)

	// Someone else pushes: the worker's view of the remote is now stale.
	other := gittest.CommitFromClone(t, e.dir, gittest.DefaultBranch, "README.md", "hello\n", "someone else")

	// The live state includes jane's edit, so the resync itself adds nothing.
	e.w.Resync(ResyncBatch{Target: testTarget, Desired: map[string][]byte{path("a"): []byte("jane v1")}})
	e.sync()

	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, v1alpha1.FinalizedByResync, out.FinalizedBy)
	assert.Equal(t, e.head(), out.SHA, "the reported SHA is what the remote holds")
	log := e.log()
	require.Len(t, log, 2)
	assert.Equal(t, []string{other}, log[0].Parents, "replayed on top of the other commit")
	assert.Equal(t, "Intent survives the cut", MessageWithoutTrailers(log[0].Message))
	assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author)
	assert.Equal(t, 2, e.faults.pushCount(), "one rejected push, one after the replay")
}

// Reference §8.4: a finalize whose edits are already on the branch resolves
// AlreadyPresent at once, never AwaitingPush, and nothing is pushed.
func TestNoDiffFinalizeIsAlreadyPresentBeforeAnyPush(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	e.step(testWindow)
	require.Len(t, e.log(), 1)
	pushes := e.faults.pushCount()

	e.edit("jane", "a", "v1") // re-asserts what the branch already has
	req := e.request("again", "jane", "Nothing new", 0)
	e.w.Attach(req)
	e.sync()

	assert.Equal(t, []string{v1alpha1.ReasonWaitingForCloseDelay, v1alpha1.ReasonAlreadyPresent}, e.rep.reasons(req.UID))
	assert.Equal(t, v1alpha1.FinalizedByCloseDelay, e.rep.terminal(t, req.UID).FinalizedBy)
	assert.Equal(t, pushes, e.faults.pushCount())
	assert.Len(t, e.log(), 1)
}

// A resync commits the difference between the live state and the folder:
// adds, updates and deletes, as the committer; files outside the folder are
// left alone; an identical state makes no commit.
func TestResyncCommitsDifferenceAsCommitter(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "keep", "same")
	e.edit("jane", "change", "old")
	e.edit("jane", "gone", "bye")
	e.step(testWindow)
	gittest.CommitFromClone(t, e.dir, gittest.DefaultBranch, "outside/file.txt", "not ours\n", "someone else")

	desired := map[string][]byte{
		path("keep"):   []byte("same"),
		path("change"): []byte("new"),
		path("added"):  []byte("hi"),
	}
	e.w.Resync(ResyncBatch{Target: testTarget, Desired: desired})
	e.sync()

	log := e.log()
	require.Len(t, log, 3, "window, someone else, resync (after a replay)")
	assert.Equal(t, "gitsave <gitsave@noreply.gitsave.dev>", log[0].Author)
	assert.Equal(t, "gitsave: resync demo/dev: 3 changes\n\n- "+path("added")+"\n- "+path("change")+"\n- "+path("gone")+" (deleted)\n", log[0].Message)
	files := gittest.Files(t, e.dir, "refs/heads/main")
	assert.ElementsMatch(t, []string{path("keep"), path("change"), path("added"), "outside/file.txt"}, files)

	e.w.Resync(ResyncBatch{Target: testTarget, Desired: desired})
	e.sync()
	assert.Len(t, e.log(), 3)
}

// A resync closes another target's window too (arrival order is kept), and
// that window keeps its generated message.
func TestResyncFinalizesOpenWindowFirst(t *testing.T) {
	e := newEnv(t)
	e.edit("bob", "b", "bob")
	e.w.Resync(ResyncBatch{Target: testTarget, Desired: map[string][]byte{path("b"): []byte("live")}})
	e.sync()
	log := e.log()
	require.Len(t, log, 2)
	assert.Equal(t, "bob <bob@users.noreply.gitsave.dev>", log[1].Author)
	got, _ := e.file("b")
	assert.Equal(t, "live", got)
}

// A window Git refuses (here a file where a folder exists) resolves
// CommitFailed and is dropped; the worker goes on.
func TestCommitFailureResolvesCommitFailed(t *testing.T) {
	e := newEnv(t)
	e.w.Submit(Event{Target: testTarget, Path: testFolder + "/dir/file.yaml", Content: []byte("x"), Author: e.request("", "jane", "", 0).Author})
	e.step(testWindow)
	e.w.Submit(Event{Target: testTarget, Path: testFolder + "/dir", Content: []byte("x"), Author: e.request("", "jane", "", 0).Author})
	req := e.request("bad", "jane", "Bad", 0)
	e.w.Attach(req)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonCommitFailed, e.rep.terminal(t, req.UID).Reason)
	assert.Equal(t, 0, e.w.Snapshot().Unpushed(testTarget))
}

// A replay that finds the change already on the remote (someone pushed the
// same content meanwhile) resolves the request AlreadyPresent.
func TestReplayThatChangesNothingIsAlreadyPresent(t *testing.T) {
	e := newEnv(t)
	e.faults.failPush(errTransient)
	e.edit("jane", "a", "same content")
	req := e.request("save", "jane", "Mine", 0)
	e.w.Attach(req)
	e.sync()
	require.Equal(t, v1alpha1.ReasonAwaitingPush, e.rep.last(req.UID).Reason)

	other := gittest.CommitFromClone(t, e.dir, gittest.DefaultBranch, path("a"), "same content", "someone else")
	e.step(time.Second) // rejected, fetch, replay: nothing left to commit

	assert.Equal(t, v1alpha1.ReasonAlreadyPresent, e.rep.terminal(t, req.UID).Reason)
	assert.Equal(t, other, e.head())
	assert.Equal(t, 0, e.w.Snapshot().Unpushed(testTarget))
}
