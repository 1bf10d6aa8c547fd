package gitbench

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/gitsave/gitsave/bench/internal/fill"
	"github.com/gitsave/gitsave/pkg/git"
	"github.com/gitsave/gitsave/pkg/git/httpbackend"
)

// Sizes are the repository sizes compared; the first is the baseline.
var Sizes = []int{100, 10000, 50000}

// sizes is Sizes rotated by $GITSAVE_GITBENCH_ROUND (bench/run.sh sets it),
// so each size runs first in some rounds: on a shared disk the benchmark
// right after another's writes is slower, whatever its size.
func sizes() []int {
	r, _ := strconv.Atoi(os.Getenv("GITSAVE_GITBENCH_ROUND"))
	k := r % len(Sizes)
	return append(append([]int(nil), Sizes[k:]...), Sizes[:k]...)
}

// prefix holds the files; a changed file sits 4 folders deep, as a mirrored
// object does (<target>/<namespace>/<resource>/<name>.yaml).
const prefix = "clusters/fill"

const (
	user     = "bench"
	password = "bench-password"
)

var (
	root   string             // temporary folder for everything below
	server *httptest.Server   // git http-backend over root/http
	repos  = map[string]any{} // fixtures reused across -count rounds
	edits  int                // makes every edit change content
	// process tells this process's edits from those of earlier rounds, which
	// left their contents on the kept fixtures: an edit repeating one would
	// change nothing, and commit and push nothing.
	process = strconv.FormatInt(time.Now().UnixNano(), 36)
	author  = git.Identity{Name: "jane", Email: "jane@users.noreply.gitsave.dev"}
	bot     = git.Identity{Name: "gitsave", Email: "gitsave@noreply.gitsave.dev"}
)

// TestMain serves root/http over smart HTTP. $GITSAVE_GITBENCH_DIR keeps the
// fixtures between processes (bench/run.sh runs one process per round, so
// the sizes are measured close in time, round after round).
func TestMain(m *testing.M) {
	var err error
	keep := os.Getenv("GITSAVE_GITBENCH_DIR")
	root = keep
	if keep == "" {
		root, err = os.MkdirTemp("", "gitsave-gitbench-")
	} else {
		err = os.MkdirAll(root, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h, err := httpbackend.New(filepath.Join(root, "http"), user, password)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server = httptest.NewServer(h)
	code := m.Run()
	server.Close()
	for _, r := range repos {
		if r, ok := r.(*git.Repo); ok {
			_ = r.Close()
		}
	}
	if keep == "" {
		_ = os.RemoveAll(root)
	}
	os.Exit(code)
}

// bareRepo returns a bare repository with n filler files on main, cli and
// gogit (separate branches so go-git and CLI pushes never race), built once.
func bareRepo(b *testing.B, n int) string {
	dir := filepath.Join(root, "http", fmt.Sprintf("files-%d.git", n))
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	start := time.Now()
	if err := fill.Import(dir, "main", prefix, n, "cli", "gogit"); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d-file repository in %s", n, time.Since(start).Round(time.Millisecond))
	return dir
}

func url(n int) string { return fmt.Sprintf("%s/files-%d.git", server.URL, n) }

// nextEdit changes one existing file, spread over the folders.
func nextEdit(n int) git.Change {
	edits++
	i := edits * 7919 % n
	return git.Change{Path: fill.Path(prefix, i), Content: []byte(fill.Content(i) + "# edit " + process + "-" + strconv.Itoa(edits) + "\n")}
}

// open opens a pkg/git Repo on the branch, in memory or with an on-disk
// cache like gitsave-apiserver's --data-dir.
func open(b *testing.B, remote, branch, cacheDir string) *git.Repo {
	opts := git.Options{URL: remote, Branch: branch, Dir: cacheDir}
	if strings.HasPrefix(remote, "http") {
		opts.Auth = &githttp.BasicAuth{Username: user, Password: password}
	}
	r, err := git.Open(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// storages: in memory (the tree work alone), an on-disk cache as deployed,
// and the same on tmpfs (the disk format's CPU cost without the device's
// latency, which on a shared VM disk is most of the noise).
func storages() []string {
	s := []string{"memory", "disk"}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		s = append(s, "tmpfs")
	}
	return s
}

// tempDir is a fresh folder under parent, removed when b ends.
func tempDir(b *testing.B, parent string) string {
	d, err := os.MkdirTemp(parent, "gitbench-cache-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// BenchmarkCommitOneFile opens the repository afresh for every call (the
// framework calls it with growing b.N, and -count times), so no round pays
// for the commits of another: in memory, every object ever written stays on
// the heap.
func BenchmarkCommitOneFile(b *testing.B) {
	for _, storage := range storages() {
		for _, n := range sizes() {
			b.Run(fmt.Sprintf("storage=%s/files=%d", storage, n), func(b *testing.B) {
				dir := bareRepo(b, n)
				cache := ""
				switch storage {
				case "disk":
					cache = tempDir(b, root)
				case "tmpfs":
					cache = tempDir(b, "/dev/shm")
				}
				r := open(b, dir, "main", cache)
				defer r.Close()
				if storage == "disk" {
					// Flush the freshly fetched pack now, or its writeback (larger
					// for a larger repository) lands inside the timed loop.
					syscall.Sync()
				}
				objects := 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := r.Commit([]git.Change{nextEdit(n)}, author, bot, time.Now(), "edit")
					if err != nil {
						b.Fatal(err)
					}
					objects += res.ObjectsWritten
					// Unpushed commits are held in memory until pushed; gitsave
					// pushes every window, so do not let b.N of them pile up.
					r.ResetToRemote()
				}
				b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
			})
		}
	}
}

func BenchmarkCommitPushOneFile(b *testing.B) {
	for _, n := range sizes() {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			bareRepo(b, n)
			key := fmt.Sprintf("push-%d", n)
			if repos[key] == nil {
				// Kept across calls: the remote branch moves with every push.
				repos[key] = open(b, url(n), "gogit", filepath.Join(root, "cache", key))
			}
			r := repos[key].(*git.Repo)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Commit([]git.Change{nextEdit(n)}, author, bot, time.Now(), "edit"); err != nil {
					b.Fatal(err)
				}
				if _, err := r.Push(context.Background()); err != nil {
					b.Fatal(err)
				}
				// As the branch worker does once the push is reported.
				if err := r.Persist(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// clone checks out branch cli of the n-file repository over HTTP, once per
// purpose (commit-only commits must never pile up for the push benchmark).
func clone(b *testing.B, purpose string, n int) string {
	key := fmt.Sprintf("clone-%s-%d", purpose, n)
	if d, ok := repos[key]; ok {
		return d.(string)
	}
	bareRepo(b, n)
	dir := filepath.Join(root, key)
	remote := strings.Replace(url(n), "http://", "http://"+user+":"+password+"@", 1)
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		// Kept from an earlier process: the server has a new port.
		cli(b, dir, "remote", "set-url", "origin", remote)
		repos[key] = dir
		return dir
	}
	start := time.Now()
	cli(b, "", "clone", "--quiet", "--branch", "cli", remote, dir)
	cli(b, dir, "config", "user.name", "jane")
	cli(b, dir, "config", "user.email", "jane@users.noreply.gitsave.dev")
	b.Logf("cloned %d files in %s", n, time.Since(start).Round(time.Millisecond))
	repos[key] = dir
	return dir
}

// cliEdit writes the next edit into the worktree and returns its path.
func cliEdit(b *testing.B, dir string, n int) string {
	c := nextEdit(n)
	if err := os.WriteFile(filepath.Join(dir, c.Path), c.Content, 0o644); err != nil {
		b.Fatal(err)
	}
	return c.Path
}

func BenchmarkCLICommitOneFile(b *testing.B) {
	for _, n := range sizes() {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := clone(b, "commit", n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := cliEdit(b, dir, n)
				cli(b, dir, "add", "--", p)
				cli(b, dir, "commit", "--quiet", "--no-verify", "-m", "edit")
			}
		})
	}
}

func BenchmarkCLICommitPushOneFile(b *testing.B) {
	for _, n := range sizes() {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := clone(b, "push", n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := cliEdit(b, dir, n)
				cli(b, dir, "add", "--", p)
				cli(b, dir, "commit", "--quiet", "--no-verify", "-m", "edit")
				cli(b, dir, "push", "--quiet", "origin", "HEAD:cli")
			}
		})
	}
}

// cli runs git isolated from the user's configuration.
func cli(b *testing.B, dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
