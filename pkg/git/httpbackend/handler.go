// Package httpbackend serves bare git repositories over smart HTTP with
// `git http-backend` behind net/http/cgi, with basic auth and push enabled.
// Tests (pkg/git/gittest) and the local control plane (hack/git-http-server)
// share it.
package httpbackend

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"sync/atomic"
)

// Handler serves every bare repository under a root folder at /<name>.
// SetDown and SetPassword change its behaviour while it runs, to exercise a
// client's failure handling.
type Handler struct {
	// Stderr receives git http-backend's error output; nil means os.Stderr.
	Stderr io.Writer

	git  string
	root string
	user string
	pass atomic.Pointer[string]
	down atomic.Bool
}

// New serves the repositories under root. An empty user turns auth off.
func New(root, user, password string) (*Handler, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("httpbackend: %w", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("httpbackend: %w", err)
	}
	h := &Handler{git: git, root: abs, user: user}
	h.SetPassword(password)
	return h, nil
}

// SetDown makes every request answer 503 while down is true.
func (h *Handler) SetDown(down bool) { h.down.Store(down) }

// SetPassword changes the password requests must present.
func (h *Handler) SetPassword(p string) { h.pass.Store(&p) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.down.Load() {
		http.Error(w, "git server is down", http.StatusServiceUnavailable)
		return
	}
	if h.user != "" && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	backend := &cgi.Handler{
		Path:   h.git,
		Args:   []string{"http-backend"},
		Dir:    h.root,
		Stderr: h.Stderr,
		Env: []string{
			"GIT_PROJECT_ROOT=" + h.root,
			"GIT_HTTP_EXPORT_ALL=1",
			// Enable pushes whatever the repositories' own config says.
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=true",
			// git names the pusher after REMOTE_USER in its logs and reflogs.
			"REMOTE_USER=" + h.user,
		},
	}
	backend.ServeHTTP(w, r)
}

func (h *Handler) authorized(r *http.Request) bool {
	u, p, ok := r.BasicAuth()
	if !ok {
		return false
	}
	want := *h.pass.Load()
	userOK := subtle.ConstantTimeCompare([]byte(u), []byte(h.user)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(p), []byte(want)) == 1
	return userOK && passOK
}
