package worker

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitsave/gitsave/pkg/git"
)

// Repository is what a worker needs from its local view of the branch;
// *git.Repo implements it. It is used only from the worker's goroutine.
type Repository interface {
	Tip() plumbing.Hash
	RemoteTip() plumbing.Hash
	Commit(changes []git.Change, author, committer git.Identity, when time.Time, message string) (git.CommitResult, error)
	ListFiles(prefix string) (map[string]plumbing.Hash, error)
	Push(ctx context.Context) (plumbing.Hash, error)
	Fetch(ctx context.Context) (plumbing.Hash, error)
	// Persist writes what was pushed to the local cache; Push leaves it for
	// after the push has been reported.
	Persist() error
	ResetToRemote()
	Close() error
}

// Opener opens (clones or refreshes) the repository. The worker calls it on its
// first start and again after a permanent error such as auth denied, so an
// opener that reads credentials each time picks up a fixed Secret.
type Opener func(ctx context.Context) (Repository, error)

// GitOpener opens a *git.Repo with the options options returns at each call.
func GitOpener(options func(ctx context.Context) (git.Options, error)) Opener {
	return func(ctx context.Context) (Repository, error) {
		o, err := options(ctx)
		if err != nil {
			return nil, err
		}
		r, err := git.Open(ctx, o)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
}
