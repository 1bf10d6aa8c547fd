package worker

import (
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/git/gittest"
)

// These tests run the worker against a real bare repository served over
// smart HTTP with basic auth.

func newHTTPEnv(t *testing.T) (*env, *gittest.Server) {
	t.Helper()
	srv := gittest.NewServer(t, "", "gitsave", "s3cret")
	dir := srv.NewRepo(t, "repo.git")
	e := newEnv(t, withRemote(srv.URL("repo.git"), dir, &githttp.BasicAuth{Username: "gitsave", Password: "s3cret"}))
	require.Equal(t, RemoteOK, e.w.Snapshot().Health)
	return e, srv
}

// Someone pushes between our read of the remote head and our update: the
// compare-and-swap fails, the worker fetches, replays, and the request's SHA
// is the remote head.
func TestHTTPRemoteAdvancedIsReplayed(t *testing.T) {
	e, srv := newHTTPEnv(t)
	e.edit("jane", "a", "v1")
	e.step(testWindow)
	first := e.head()
	require.NotEmpty(t, first)

	var other string
	srv.BeforeNextReceivePack(func() {
		other = gittest.CommitFromClone(t, e.dir, gittest.DefaultBranch, "README.md", "raced\n", "someone else")
	})
	e.edit("jane", "b", "v1")
	req := e.request("save", "jane", "Raced save", 0)
	e.w.Attach(req)
	e.sync()

	out := e.rep.terminal(t, req.UID)
	require.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, e.head(), out.SHA)
	log := e.log()
	require.Len(t, log, 3)
	assert.Equal(t, []string{other}, log[0].Parents)
	assert.Equal(t, []string{first}, log[1].Parents)
	assert.Equal(t, "Raced save", MessageWithoutTrailers(log[0].Message))
	assert.ElementsMatch(t, []string{"README.md", path("a"), path("b")}, gittest.Files(t, e.dir, "refs/heads/main"))
}

// The server is down for a while: every write is kept, requests wait in
// AwaitingPush, and all of it lands when the server is back.
func TestHTTPRemoteDownLosesNothing(t *testing.T) {
	e, srv := newHTTPEnv(t)
	srv.SetDown(true)

	e.edit("jane", "a", "v1")
	first := e.request("first", "jane", "During the outage", 0)
	e.w.Attach(first)
	e.edit("bob", "b", "v1")
	e.step(testWindow) // bob's window: silence timer, push fails too
	e.edit("jane", "c", "v1")
	second := e.request("second", "jane", "Still down", 0)
	e.w.Attach(second)
	e.step(time.Second)
	e.step(2 * time.Second)

	for _, r := range []string{"first", "second"} {
		last := e.rep.last(uid(r))
		assert.Equal(t, v1alpha1.ReasonAwaitingPush, last.Reason, r)
		assert.NotEmpty(t, last.Message, r)
	}
	assert.Equal(t, 3, e.w.Snapshot().Unpushed(testTarget))
	assert.Empty(t, e.head())

	srv.SetDown(false)
	e.step(time.Minute)

	a, b := e.rep.terminal(t, first.UID), e.rep.terminal(t, second.UID)
	assert.Equal(t, v1alpha1.ReasonCommitted, a.Reason)
	assert.Equal(t, v1alpha1.ReasonCommitted, b.Reason)
	assert.Equal(t, e.head(), b.SHA)
	log := e.log()
	require.Len(t, log, 3)
	assert.Equal(t, a.SHA, log[2].SHA)
	assert.ElementsMatch(t, []string{path("a"), path("b"), path("c")}, gittest.Files(t, e.dir, "refs/heads/main"))
	assert.Equal(t, RemoteOK, e.w.Snapshot().Health)
}

// A changed password: the push is denied (PushFailed, AuthDenied), the write
// is kept, and it lands once the credentials work again.
func TestHTTPAuthDeniedThenFixed(t *testing.T) {
	e, srv := newHTTPEnv(t)
	srv.SetPassword("rotated")
	e.edit("jane", "a", "v1")
	req := e.request("save", "jane", "Denied", 0)
	e.w.Attach(req)
	e.sync()
	assert.Equal(t, v1alpha1.ReasonPushFailed, e.rep.terminal(t, req.UID).Reason)
	assert.Equal(t, RemoteAuthDenied, e.w.Snapshot().Health)

	e.step(time.Second) // the reopen is denied too
	assert.Equal(t, RemoteAuthDenied, e.w.Snapshot().Health)
	srv.SetPassword("s3cret")
	e.step(time.Minute)
	assert.Equal(t, RemoteOK, e.w.Snapshot().Health)
	assert.Equal(t, []string{path("a")}, gittest.Files(t, e.dir, "refs/heads/main"))
}
