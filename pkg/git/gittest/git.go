// Package gittest holds test helpers around real git: bare repositories, a
// smart-HTTP server with basic auth, and git CLI readers to check what a remote
// holds. It is used by pkg/git's tests and by other packages' tests.
package gittest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// DefaultBranch is the branch NewBareRepo points HEAD at.
const DefaultBranch = "main"

// Git runs the git CLI in dir (any dir if ""), isolated from the user's and
// the system's config, and returns its trimmed stdout. It fails the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(string(gitIn(t, dir, nil, args...)))
}

// GitErr runs the git CLI like Git and returns its error instead of failing
// the test, for commands expected to fail.
func GitErr(dir string, args ...string) error {
	_, err := runGit(dir, nil, args...)
	return err
}

func gitIn(t testing.TB, dir string, stdin []byte, args ...string) []byte {
	t.Helper()
	out, err := runGit(dir, stdin, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.stderr) }

func runGit(dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Someone Else", "GIT_AUTHOR_EMAIL=someone@example.com",
		"GIT_COMMITTER_NAME=Someone Else", "GIT_COMMITTER_EMAIL=someone@example.com",
	)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &gitError{err, stderr.String()}
	}
	return stdout.Bytes(), nil
}

// NewBareRepo creates an empty bare repository whose HEAD is main, in a
// temporary folder removed after the test.
func NewBareRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo.git")
	Git(t, "", "init", "--quiet", "--bare", "--initial-branch="+DefaultBranch, dir)
	return dir
}

// Head returns the commit id branch points at in the repository dir, or ""
// when the branch does not exist.
func Head(t testing.TB, dir, branch string) string {
	t.Helper()
	out, err := runGit(dir, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// CommitInfo is one commit as git sees it; Message is byte-exact.
type CommitInfo struct {
	SHA       string
	Parents   []string
	Author    string // "Name <email>"
	Committer string // "Name <email>"
	Message   string
}

// Log lists the commits reachable from branch, newest first. An unborn branch
// gives nil.
func Log(t testing.TB, dir, branch string) []CommitInfo {
	t.Helper()
	if Head(t, dir, branch) == "" {
		return nil
	}
	shas := gitIn(t, dir, nil, "rev-list", "refs/heads/"+branch)
	// One cat-file process for all commits: raw objects keep messages byte-exact.
	raw := gitIn(t, dir, shas, "cat-file", "--batch")
	var out []CommitInfo
	for len(raw) > 0 {
		nl := bytes.IndexByte(raw, '\n')
		hdr := strings.Fields(string(raw[:nl]))
		size, err := strconv.Atoi(hdr[2])
		if err != nil {
			t.Fatalf("cat-file header %q: %v", hdr, err)
		}
		body := string(raw[nl+1 : nl+1+size])
		raw = raw[nl+1+size+1:]
		out = append(out, parseCommit(hdr[0], body))
	}
	return out
}

func parseCommit(sha, body string) CommitInfo {
	c := CommitInfo{SHA: sha}
	headers, msg, _ := strings.Cut(body, "\n\n")
	c.Message = msg
	for _, line := range strings.Split(headers, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "parent":
			c.Parents = append(c.Parents, v)
		case "author":
			c.Author = ident(v)
		case "committer":
			c.Committer = ident(v)
		}
	}
	return c
}

// ident drops the "<time> <zone>" tail of a signature line.
func ident(v string) string {
	if i := strings.LastIndexByte(v, '>'); i >= 0 {
		return v[:i+1]
	}
	return v
}

// ShowFile returns the content of path at rev (a commit, branch or tag) in the
// repository dir, and whether it exists.
func ShowFile(t testing.TB, dir, rev, path string) ([]byte, bool) {
	t.Helper()
	if _, err := runGit(dir, nil, "cat-file", "-e", rev+":"+path); err != nil {
		return nil, false
	}
	return gitIn(t, dir, nil, "cat-file", "blob", rev+":"+path), true
}

// Files lists every file path at rev in the repository dir.
func Files(t testing.TB, dir, rev string) []string {
	t.Helper()
	out := Git(t, dir, "ls-tree", "-r", "--name-only", rev)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// CommitFromClone plays someone else: it clones remote (a URL or a bare
// repository folder), writes path, commits and pushes to branch, and returns
// the new commit id. The branch may not exist yet.
func CommitFromClone(t testing.TB, remote, branch, path, content, msg string) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "clone")
	Git(t, "", "clone", "--quiet", remote, work)
	if _, err := runGit(work, nil, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+branch); err == nil {
		Git(t, work, "checkout", "--quiet", "-B", branch, "origin/"+branch)
	} else {
		Git(t, work, "checkout", "--quiet", "--orphan", branch)
	}
	file := filepath.Join(work, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, work, "add", "--", path)
	Git(t, work, "commit", "--quiet", "-m", msg)
	Git(t, work, "push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
	return Git(t, work, "rev-parse", "HEAD")
}
