package git

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/git/gittest"
)

func TestPushRejectedThenReplay(t *testing.T) {
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) { testPushRejectedThenReplay(t, s.remote(t), s.onDisk) })
	}
}

func testPushRejectedThenReplay(t *testing.T, rm remote, onDisk bool) {
	cache := ""
	if onDisk {
		cache = t.TempDir()
	}
	r := rm.open(t, cache)
	commit(t, r, "base", set("ns/a.yaml", "a: 1\n"))
	push(t, r)
	base := r.Tip()

	theirs := gittest.CommitFromClone(t, rm.dir, "main", "ns/theirs.yaml", "t: 1\n", "someone else")
	commit(t, r, "mine", set("ns/mine.yaml", "m: 1\n"))
	mine := r.Tip()

	_, err := r.Push(context.Background())
	require.ErrorIs(t, err, ErrRejected)
	assert.NotErrorIs(t, err, ErrAuth)
	assert.False(t, IsTransient(err))
	assert.Equal(t, theirs, gittest.Head(t, rm.dir, "main"), "remote untouched")
	assert.Equal(t, base, r.RemoteTip())
	assert.Equal(t, mine, r.Tip())

	head, err := r.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, theirs, head.String())
	assert.Equal(t, head, r.RemoteTip())
	assert.Equal(t, mine, r.Tip(), "Fetch does not move Tip")

	r.ResetToRemote()
	got, ok, err := r.ReadFile("ns/theirs.yaml")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "t: 1\n", string(got))
	_, ok, err = r.ReadFile("ns/mine.yaml")
	require.NoError(t, err)
	assert.False(t, ok, "the unpushed commit is gone until replayed")

	res := commit(t, r, "mine", set("ns/mine.yaml", "m: 1\n"))
	assert.NotEqual(t, mine, res.SHA, "replay gets a new SHA")
	push(t, r)
	assert.Equal(t, r.Tip().String(), gittest.Head(t, rm.dir, "main"))
	assert.Equal(t, r.Tip(), r.RemoteTip())

	log := gittest.Log(t, rm.dir, "main")
	require.Len(t, log, 3)
	assert.Equal(t, []string{theirs}, log[0].Parents, "built on the other person's commit")
	assert.Equal(t, "someone else\n", log[1].Message)
	assert.ElementsMatch(t, []string{"ns/a.yaml", "ns/mine.yaml", "ns/theirs.yaml"}, gittest.Files(t, rm.dir, "main"))
}

// The remote moves after the client read its head and before the pack lands:
// the server's own compare-and-swap refuses the update.
func TestPushLosesRaceAtServer(t *testing.T) {
	rm := httpRemote(t)
	r := rm.open(t, "")
	commit(t, r, "base", set("a", "1"))
	push(t, r)
	other := gittest.CommitFromClone(t, rm.dir, "main", "b", "2", "other")
	// Put the remote back, let us read the old head, then move it again.
	gittest.Git(t, rm.dir, "update-ref", "refs/heads/main", r.Tip().String())
	rm.srv.BeforeNextReceivePack(func() {
		gittest.Git(t, rm.dir, "update-ref", "refs/heads/main", other)
	})

	commit(t, r, "mine", set("c", "3"))
	_, err := r.Push(context.Background())
	require.ErrorIs(t, err, ErrRejected)
	t.Log(err)
	assert.Equal(t, other, gittest.Head(t, rm.dir, "main"))
}

func TestPushToUnbornRemoteLosesRace(t *testing.T) {
	rm := httpRemote(t)
	r := rm.open(t, "")
	commit(t, r, "first", set("a", "1"))
	rm.srv.BeforeNextReceivePack(func() {
		gittest.CommitFromClone(t, rm.dir, "main", "b", "2", "first elsewhere")
	})
	_, err := r.Push(context.Background())
	require.ErrorIs(t, err, ErrRejected)
	t.Log(err)
}

func TestPushServerDownIsTransient(t *testing.T) {
	rm := httpRemote(t)
	r := rm.open(t, "")
	commit(t, r, "one", set("a.yaml", "1"))

	rm.srv.SetDown(true)
	_, err := r.Push(context.Background())
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrRejected)
	assert.NotErrorIs(t, err, ErrAuth)
	assert.True(t, IsTransient(err), "%v", err)
	_, err = r.Fetch(context.Background())
	assert.True(t, IsTransient(err), "%v", err)
	assert.True(t, r.RemoteTip().IsZero())

	// Writes keep piling up while the remote is down.
	commit(t, r, "two", set("b.yaml", "2"))
	rm.srv.SetDown(false)
	push(t, r)
	assert.Equal(t, r.Tip().String(), gittest.Head(t, rm.dir, "main"))
	assert.Len(t, gittest.Log(t, rm.dir, "main"), 2)
	assert.Equal(t, []string{"a.yaml", "b.yaml"}, gittest.Files(t, rm.dir, "main"))
}

func TestOpenWhileDownIsTransient(t *testing.T) {
	rm := httpRemote(t)
	rm.srv.SetDown(true)
	_, err := Open(context.Background(), Options{URL: rm.url, Branch: "main", Auth: rm.auth})
	require.Error(t, err)
	assert.True(t, IsTransient(err), "%v", err)
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	_, err := Open(context.Background(), Options{URL: "http://127.0.0.1:1/repo.git", Branch: "main"})
	require.Error(t, err)
	assert.True(t, IsTransient(err), "%v", err)
}

func TestWrongPasswordIsAuth(t *testing.T) {
	rm := httpRemote(t)
	r := rm.open(t, "")
	commit(t, r, "one", set("a", "1"))

	rm.srv.SetPassword("changed")
	_, err := r.Push(context.Background())
	require.ErrorIs(t, err, ErrAuth)
	assert.False(t, IsTransient(err))
	_, err = r.Fetch(context.Background())
	require.ErrorIs(t, err, ErrAuth)
	_, err = Open(context.Background(), Options{URL: rm.url, Branch: "main", Auth: rm.auth})
	require.ErrorIs(t, err, ErrAuth)
	_, err = Open(context.Background(), Options{URL: rm.url, Branch: "main"})
	require.ErrorIs(t, err, ErrAuth, "no credentials at all")

	rm.srv.SetPassword(password)
	push(t, r)
}

func TestPushNothingIsImmediate(t *testing.T) {
	rm := httpRemote(t)
	r := rm.open(t, "")
	rm.srv.SetDown(true) // any network use would fail
	h, err := r.Push(context.Background())
	require.NoError(t, err)
	assert.True(t, h.IsZero())
	_, err = r.Commit([]Change{set("x", "")}, jane, bot, when, "m")
	require.NoError(t, err)
	r.ResetToRemote()
	_, err = r.Push(context.Background())
	require.NoError(t, err)
}

// A push that landed although its answer was lost: the next Push sees the
// remote already at Tip and succeeds without sending anything, and the
// on-disk cache then holds the commit as a valid repository.
func TestPushAnswerLost(t *testing.T) {
	rm := localRemote(t)
	cache := t.TempDir()
	r := rm.open(t, cache)
	commit(t, r, "one", set("a", "1"))
	landElsewhere(t, rm, r, "one", set("a", "1"))

	h, err := r.Push(context.Background())
	require.NoError(t, err)
	assert.Equal(t, r.Tip(), h)
	assert.Equal(t, r.Tip(), r.RemoteTip())
	require.NoError(t, r.Persist())
	assert.Equal(t, r.Tip().String(), gittest.Head(t, cache, "main"))
	gittest.Git(t, cache, "fsck", "--strict", "--no-progress")
}

func TestFetchSeesDeletedBranch(t *testing.T) {
	rm := localRemote(t)
	r := rm.open(t, "")
	commit(t, r, "one", set("a", "1"))
	push(t, r)
	gittest.Git(t, rm.dir, "update-ref", "-d", "refs/heads/main")
	h, err := r.Fetch(context.Background())
	require.NoError(t, err)
	assert.True(t, h.IsZero())
	r.ResetToRemote()
	assert.True(t, r.Tip().IsZero())
}

// A restart with an on-disk cache fetches only what is new and starts from the
// remote head.
func TestReopenCacheFetchesNewCommits(t *testing.T) {
	rm := httpRemote(t)
	cache := t.TempDir()
	r := rm.open(t, cache)
	commit(t, r, "mine", set("a/mine.yaml", "1"))
	push(t, r)
	commit(t, r, "never pushed", set("a/lost.yaml", "1"))
	require.NoError(t, r.Close())

	theirs := gittest.CommitFromClone(t, rm.dir, "main", "a/theirs.yaml", "2", "theirs")
	r2 := rm.open(t, cache)
	assert.Equal(t, theirs, r2.Tip().String())
	assert.Equal(t, r2.Tip(), r2.RemoteTip())
	files, err := r2.ListFiles("a")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/mine.yaml", "a/theirs.yaml"}, keys(files), "unpushed commits of the old process are dropped")
	assert.Equal(t, theirs, gittest.Head(t, cache, "main"))
	gittest.Git(t, cache, "fsck", "--no-progress")
}

func TestErrorClasses(t *testing.T) {
	assert.False(t, IsTransient(nil))
	assert.True(t, IsTransient(errors.New("boom")))
	assert.False(t, IsTransient(ErrRejected))
	assert.False(t, IsTransient(ErrAuth))
}
