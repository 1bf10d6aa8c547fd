package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
)

// The silence timer commits a window CommitWindow after its last event; a
// later event restarts the silence. Last write per path wins.
func TestSilenceTimerCommitsWindow(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	e.step(testWindow / 2)
	e.edit("jane", "a", "v2")
	e.edit("jane", "b", "v1")
	e.step(testWindow / 2)
	assert.Empty(t, e.head(), "the second edit restarted the silence")

	e.step(testWindow / 2)
	log := e.log()
	require.Len(t, log, 1)
	assert.Equal(t, "gitsave: 2 changes by jane\n\n- "+path("a")+"\n- "+path("b")+"\n", log[0].Message)
	got, _ := e.file("a")
	assert.Equal(t, "v2", got)
	assert.Empty(t, e.w.Snapshot().OpenWindowAuthor)
}

// The silence timer is one more cut-off: an attached request whose deadline
// is later still gets its message and Committed.
func TestSilenceTimerCarriesAttachedRequest(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	req := e.request("slow", "jane", "Long grace", 5*time.Minute)
	e.w.Attach(req)
	e.step(testWindow)
	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, v1alpha1.FinalizedBySilenceTimer, out.FinalizedBy)
	assert.Equal(t, "Long grace", MessageWithoutTrailers(e.log()[0].Message))
}

func TestBufferLimitCommitsFullWindow(t *testing.T) {
	e := newEnv(t, withMaxEvents(3))
	e.edit("jane", "a", "v1")
	req := e.request("save", "jane", "Buffered", time.Minute)
	e.w.Attach(req)
	e.edit("jane", "b", "v1")
	e.sync()
	assert.Empty(t, e.head())
	e.edit("jane", "c", "v1")
	e.edit("jane", "d", "v1") // opens the next window
	e.sync()

	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, v1alpha1.FinalizedByBufferLimit, out.FinalizedBy)
	assert.Equal(t, 3, out.FilesChanged)
	assert.Len(t, e.log(), 1)
	assert.Equal(t, "jane", e.w.Snapshot().OpenWindowAuthor)
}

// Another author's edit closes the open window (AuthorSwitch) and opens its
// own; the closed window's request keeps its message.
func TestAuthorSwitchFinalizes(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "jane")
	req := e.request("save", "jane", "Jane's work", time.Minute)
	e.w.Attach(req)
	e.edit("bob", "b", "bob")
	e.sync()

	out := e.rep.terminal(t, req.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, v1alpha1.FinalizedByAuthorSwitch, out.FinalizedBy)
	log := e.log()
	require.Len(t, log, 1)
	assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author)
	assert.Equal(t, "bob", e.w.Snapshot().OpenWindowAuthor)

	e.step(testWindow)
	log = e.log()
	require.Len(t, log, 2)
	assert.Equal(t, "bob <bob@users.noreply.gitsave.dev>", log[0].Author)
}

// A window is per (author, target): the same author on another target of the
// same branch is a switch too.
func TestTargetSwitchFinalizes(t *testing.T) {
	e := newEnv(t)
	e.w.SetTarget(TargetConfig{Name: "demo/prod", Path: "clusters/prod", CommitWindow: testWindow, Committer: testCommitter})
	e.edit("jane", "a", "v1")
	e.w.Submit(Event{Target: "demo/prod", Path: "clusters/prod/x.yaml", Content: []byte("x"), Author: e.request("", "jane", "", 0).Author})
	e.sync()
	require.Len(t, e.log(), 1)
	s := e.w.Snapshot()
	assert.Equal(t, "demo/prod", s.OpenWindowTarget)
}

// Events for unknown targets or outside the target's folder never reach Git.
func TestEventsOutsideTargetAreDropped(t *testing.T) {
	e := newEnv(t)
	e.w.Submit(Event{Target: "demo/other", Path: testFolder + "/x.yaml", Content: []byte("x")})
	e.w.Submit(Event{Target: testTarget, Path: "elsewhere/x.yaml", Content: []byte("x")})
	e.sync()
	assert.Empty(t, e.w.Snapshot().OpenWindowAuthor)
	e.step(testWindow)
	assert.Empty(t, e.head())
}

func TestDeleteEventRemovesFile(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	e.step(testWindow)
	e.edit("jane", "a", "")
	e.step(testWindow)
	_, ok := e.file("a")
	assert.False(t, ok)
	assert.Contains(t, e.log()[0].Message, "(deleted)")
}

// A new TargetConfig applies to the open window's silence timer.
func TestTargetConfigChangeAppliesToSilence(t *testing.T) {
	e := newEnv(t)
	e.edit("jane", "a", "v1")
	e.w.SetTarget(TargetConfig{Name: testTarget, Path: testFolder, CommitWindow: 10 * time.Second, Committer: testCommitter})
	e.step(10 * time.Second)
	assert.Len(t, e.log(), 1)
}
