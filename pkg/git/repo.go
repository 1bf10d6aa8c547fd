// Package git is gitsave's only code that talks to go-git.
//
// A Repo mirrors one branch of one remote. Commits are built without a
// worktree, splicing the changed entries into the raw trees on the changed
// paths; their objects stay in memory until a push sends exactly those and
// only then are written to the object store. So the cost of a write grows with
// what changed, not with the size or history of the repository.
//
// A Repo is not safe for concurrent use: the branch worker owns it.
package git

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Options say which branch of which remote to mirror, and where to cache it.
type Options struct {
	URL    string               // https://, http://, ssh://, file:// or a local path
	Branch string               // e.g. "main"
	Auth   transport.AuthMethod // nil for none
	// Dir is an on-disk bare repository used as a cache between restarts, so a
	// restart fetches only what is new. "" keeps everything in memory.
	// One Repo per Dir.
	Dir string
}

// Repo is a local view of one remote branch: the remote tip as last seen, and a
// local tip that may be ahead of it by commits not yet pushed. Those commits'
// objects are held in memory (see objects) until the remote has them.
type Repo struct {
	st       storage.Storer
	objs     *objects
	ep       *transport.Endpoint
	client   transport.Transport
	auth     transport.AuthMethod
	branch   plumbing.ReferenceName // refs/heads/<branch>, local and on the remote
	tracking plumbing.ReferenceName // refs/remotes/origin/<branch>, last known remote head

	tip, tipTree       plumbing.Hash
	remoteTip, remTree plumbing.Hash

	lastPush PushStats
	// What the stored refs point at: the tracking ref and the local branch.
	storedRemote, storedTip plumbing.Hash
}

// Open prepares the storage, fetches the branch and sets Tip to the remote head.
// An empty remote or a missing branch is not an error: both tips are then zero
// (unborn) and the first Commit has no parent.
//
// Unpushed commits from an earlier process (in Dir) are dropped: the worker's
// list of pending writes did not survive the restart either, and it replays them.
func Open(ctx context.Context, o Options) (*Repo, error) {
	if o.URL == "" {
		return nil, errors.New("git: Options.URL is empty")
	}
	if o.Branch == "" {
		return nil, errors.New("git: Options.Branch is empty")
	}
	branch := plumbing.NewBranchReferenceName(o.Branch)
	if err := branch.Validate(); err != nil {
		return nil, fmt.Errorf("git: invalid branch %q: %w", o.Branch, err)
	}
	ep, err := transport.NewEndpoint(o.URL)
	if err != nil {
		return nil, fmt.Errorf("git: invalid URL: %w", err)
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, fmt.Errorf("git: %w", err)
	}
	st, err := openStorage(o.Dir, branch)
	if err != nil {
		return nil, err
	}
	r := &Repo{
		st: st, objs: newObjects(st), ep: ep, client: cl, auth: o.Auth,
		branch:   branch,
		tracking: plumbing.NewRemoteReferenceName("origin", o.Branch),
	}
	// A cached remote head lets the fetch send it as a "have" and get only what is new.
	if ref, err := st.Reference(r.tracking); err == nil {
		if tree, err := r.treeOf(ref.Hash()); err == nil {
			r.remoteTip, r.remTree = ref.Hash(), tree
			r.storedRemote = ref.Hash()
		}
	}
	if _, err := r.Fetch(ctx); err != nil {
		_ = r.Close()
		return nil, err
	}
	r.ResetToRemote()
	return r, nil
}

// storageCacheSize bounds go-git's object cache of an on-disk store, per Repo.
const storageCacheSize = 16 * cache.MiByte

func openStorage(dir string, branch plumbing.ReferenceName) (storage.Storer, error) {
	if dir == "" {
		return memory.NewStorage(), nil
	}
	// Not ExclusiveAccess: go-git then lists every loose object again after
	// each write, which makes a commit cost grow with the repository.
	// Its object cache mostly holds delta bases while reading packs: trees for
	// commits are cached as raw bytes by objects, so it can stay small.
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(storageCacheSize))
	// Make the cache a valid bare repository (HEAD + config) the first time, so the
	// git CLI can inspect it.
	if _, err := st.Reference(plumbing.HEAD); errors.Is(err, plumbing.ErrReferenceNotFound) {
		cfg := config.NewConfig()
		cfg.Core.IsBare = true
		if err := st.SetConfig(cfg); err != nil {
			return nil, fmt.Errorf("git: init cache %s: %w", dir, err)
		}
		if err := st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branch)); err != nil {
			return nil, fmt.Errorf("git: init cache %s: %w", dir, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("git: open cache %s: %w", dir, err)
	}
	return st, nil
}

// Close persists what was pushed and releases the storage (open pack files
// of an on-disk cache).
func (r *Repo) Close() error {
	err := r.Persist()
	if c, ok := r.st.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// Tip is the local branch head; it may be ahead of RemoteTip by unpushed commits.
func (r *Repo) Tip() plumbing.Hash { return r.tip }

// RemoteTip is the remote branch head as last fetched or pushed.
func (r *Repo) RemoteTip() plumbing.Hash { return r.remoteTip }

// ResetToRemote moves Tip back to RemoteTip and forgets the unpushed objects.
// The worker then replays its pending writes with Commit (they get new SHAs).
func (r *Repo) ResetToRemote() {
	r.tip, r.tipTree = r.remoteTip, r.remTree
	r.objs.dropPending()
	r.mirrorBranch()
}

// mirrorBranch points the stored local branch at the remote tip, the last
// commit whose objects are stored, so people inspecting the cache with git
// see a valid branch. r.tip is authoritative: a failed write changes nothing.
func (r *Repo) mirrorBranch() {
	if len(r.objs.unstored) > 0 || r.storedTip == r.remoteTip {
		return
	}
	if err := r.setRef(r.branch, r.remoteTip); err == nil {
		r.storedTip = r.remoteTip
	}
}

func (r *Repo) setRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	if h.IsZero() {
		err := r.st.RemoveReference(name)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			return nil
		}
		return err
	}
	return r.st.SetReference(plumbing.NewHashReference(name, h))
}

// treeOf returns the root tree of a commit (zero for the zero commit).
func (r *Repo) treeOf(commit plumbing.Hash) (plumbing.Hash, error) {
	if commit.IsZero() {
		return plumbing.ZeroHash, nil
	}
	o, err := r.objs.read(plumbing.CommitObject, commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var c object.Commit
	if err := c.Decode(o); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: read commit %s: %w", commit, err)
	}
	return c.TreeHash, nil
}
