package git

import (
	"context"
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/git/gittest"
)

// failingStore refuses writes while broken, like a full disk under --data-dir.
type failingStore struct {
	*memory.Storage
	broken bool
}

func (s *failingStore) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if s.broken {
		return plumbing.ZeroHash, errors.New("no space left on device")
	}
	return s.Storage.SetEncodedObject(o)
}

// Objects live in memory until pushed, reach the store after, and a failed
// store write loses nothing: they stay readable and the next store retries.
func TestObjectsLifecycle(t *testing.T) {
	st := &failingStore{Storage: memory.NewStorage()}
	objs := newObjects(st)
	blob := newRawObject(plumbing.BlobObject, []byte("a: 1\n"))
	tree := newRawObject(plumbing.TreeObject, appendEntry(nil, newEntry{name: "a.yaml", mode: 0o100644, hash: blob.Hash()}))
	objs.add(blob)
	objs.add(tree)
	objs.add(blob) // twice: pushed once
	assert.Equal(t, []plumbing.Hash{blob.Hash(), tree.Hash()}, objs.pendingOrder)
	require.ErrorIs(t, st.HasEncodedObject(blob.Hash()), plumbing.ErrObjectNotFound, "nothing is stored before the push")

	got, err := objs.tree(tree.Hash())
	require.NoError(t, err)
	assert.Equal(t, tree.data, got)
	_, err = objs.read(plumbing.TreeObject, blob.Hash())
	require.ErrorIs(t, err, plumbing.ErrObjectNotFound, "a blob is not a tree")

	objs.pushed()
	assert.Empty(t, objs.pendingOrder, "pushed objects are not sent again")
	require.ErrorIs(t, st.HasEncodedObject(blob.Hash()), plumbing.ErrObjectNotFound, "pushed is not stored yet")
	st.broken = true
	require.ErrorContains(t, objs.store(), "no space left on device")
	o, err := objs.read(plumbing.BlobObject, blob.Hash())
	require.NoError(t, err, "still readable from memory")
	assert.Equal(t, "a: 1\n", string(o.data))

	objs.dropPending() // a reset drops unpushed objects only
	st.broken = false
	require.NoError(t, objs.store())
	assert.Empty(t, objs.unstored)
	require.NoError(t, st.HasEncodedObject(blob.Hash()))
	require.NoError(t, st.HasEncodedObject(tree.Hash()))
}

// With an on-disk cache neither a commit nor a push writes there; Persist
// then makes it a valid repository holding the commit, and a reset drops what
// was never pushed without touching the cache.
func TestCommitReachesCacheOnlyWhenPushed(t *testing.T) {
	rm := localRemote(t)
	cache := t.TempDir()
	r := rm.open(t, cache)
	commit(t, r, "one", set("ns/a.yaml", "1"))
	require.Error(t, gittest.GitErr(cache, "cat-file", "-e", r.Tip().String()), "not in the cache before the push")
	push(t, r)
	require.Error(t, gittest.GitErr(cache, "cat-file", "-e", r.Tip().String()), "nor before Persist")
	assert.Empty(t, gittest.Head(t, cache, "main"), "no ref to an object not stored")
	require.NoError(t, r.Persist())
	gittest.Git(t, cache, "cat-file", "-e", r.Tip().String())
	assert.Equal(t, r.Tip().String(), gittest.Head(t, cache, "main"))
	assert.Equal(t, r.Tip().String(), gittest.Git(t, cache, "rev-parse", "refs/remotes/origin/main"))
	gittest.Git(t, cache, "fsck", "--strict", "--no-progress")

	pushed := r.Tip()
	commit(t, r, "dropped", set("ns/a.yaml", "2"))
	dropped := r.Tip()
	r.ResetToRemote()
	require.Error(t, gittest.GitErr(cache, "cat-file", "-e", dropped.String()))
	got, ok, err := r.ReadFile("ns/a.yaml")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "1", string(got))
	assert.Equal(t, pushed, r.Tip())
}

// A fetch that finds the remote at a commit still pending here (its push
// landed but the answer was lost) downloads it, so the reset that follows
// does not drop objects the new remote tip needs.
func TestFetchOfOwnPendingCommitKeepsItsObjects(t *testing.T) {
	rm := localRemote(t)
	cache := t.TempDir()
	r := rm.open(t, cache)
	commit(t, r, "one", set("ns/a.yaml", "1"))
	landElsewhere(t, rm, r, "one", set("ns/a.yaml", "1"))

	head, err := r.Fetch(context.Background())
	require.NoError(t, err)
	require.Equal(t, r.Tip(), head)
	r.ResetToRemote()
	got, ok, err := r.ReadFile("ns/a.yaml")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "1", string(got))
	require.NoError(t, r.Persist())
	gittest.Git(t, cache, "fsck", "--strict", "--no-progress")
	assert.Equal(t, head.String(), gittest.Head(t, cache, "main"))
}
