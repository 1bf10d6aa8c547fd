package gittest

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gitsave/gitsave/pkg/git/httpbackend"
)

// Server serves the bare repositories under Root over smart HTTP on
// 127.0.0.1 with basic auth. SetDown and SetPassword (from the handler) make
// it fail on purpose.
type Server struct {
	*httpbackend.Handler
	Root string

	srv    *httptest.Server
	mu     sync.Mutex
	before func()
}

// NewServer starts a server for root ("" for a fresh temporary folder),
// stopped when the test ends.
func NewServer(t testing.TB, root, user, password string) *Server {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	h, err := httpbackend.New(root, user, password)
	if err != nil {
		t.Fatal(err)
	}
	h.Stderr = logWriter{t}
	s := &Server{Handler: h, Root: root}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		s.mu.Lock()
		f := s.before
		s.before = nil
		s.mu.Unlock()
		if f != nil {
			f()
		}
	}
	s.Handler.ServeHTTP(w, r)
}

// URL is the clone URL of the repository Root/name.
func (s *Server) URL(name string) string { return s.srv.URL + "/" + name }

// NewRepo creates an empty bare repository Root/name (HEAD main) and returns
// its folder.
func (s *Server) NewRepo(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(s.Root, name)
	Git(t, "", "init", "--quiet", "--bare", "--initial-branch="+DefaultBranch, dir)
	return dir
}

// BeforeNextReceivePack runs f once, just before the next push's pack reaches
// git: the moment between a client reading the remote head and updating it,
// to provoke a lost compare-and-swap race. f runs on the server's goroutine.
func (s *Server) BeforeNextReceivePack(f func()) {
	s.mu.Lock()
	s.before = f
	s.mu.Unlock()
}

// logWriter sends git http-backend's stderr to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Logf("git http-backend: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}
