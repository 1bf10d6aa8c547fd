package git

import (
	"context"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/git/gittest"
)

var (
	jane = Identity{Name: "jane", Email: "jane@users.noreply.gitsave.dev"}
	bot  = Identity{Name: "gitsave", Email: "gitsave@gitsave.dev"}
	when = time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
)

const (
	user     = "git-user"
	password = "s3cret"
)

// remote is a bare repository reachable at url, with its folder for the git CLI.
type remote struct {
	url, dir string
	auth     transport.AuthMethod
	srv      *gittest.Server
}

// localRemote is a bare repository opened by path (go-git's file transport).
func localRemote(t testing.TB) remote {
	dir := gittest.NewBareRepo(t)
	return remote{url: dir, dir: dir}
}

// httpRemote is a bare repository behind git http-backend with basic auth.
func httpRemote(t testing.TB) remote {
	srv := gittest.NewServer(t, "", user, password)
	dir := srv.NewRepo(t, "mirror.git")
	return remote{url: srv.URL("mirror.git"), dir: dir, srv: srv,
		auth: &githttp.BasicAuth{Username: user, Password: password}}
}

func (rm remote) open(t testing.TB, cacheDir string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), Options{URL: rm.url, Branch: "main", Auth: rm.auth, Dir: cacheDir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func set(path, content string) Change { return Change{Path: path, Content: []byte(content)} }
func del(path string) Change          { return Change{Path: path, Delete: true} }

func commit(t testing.TB, r *Repo, msg string, changes ...Change) CommitResult {
	t.Helper()
	res, err := r.Commit(changes, jane, bot, when, msg)
	require.NoError(t, err)
	return res
}

func push(t testing.TB, r *Repo) {
	t.Helper()
	_, err := r.Push(context.Background())
	require.NoError(t, err)
}

// landElsewhere commits the same change as r's last commit (same content,
// identities, time and message, so the same SHA) through another Repo and
// pushes it: as if r's own push had landed with its answer lost.
func landElsewhere(t testing.TB, rm remote, r *Repo, msg string, c Change) {
	t.Helper()
	other := rm.open(t, "")
	require.Equal(t, r.Tip(), commit(t, other, msg, c).SHA)
	push(t, other)
}
