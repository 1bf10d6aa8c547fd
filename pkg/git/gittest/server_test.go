package gittest

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The server speaks smart HTTP to the real git client too (clone and push).
func TestServerWithGitCLI(t *testing.T) {
	s := NewServer(t, "", "alice", "pw")
	dir := s.NewRepo(t, "r.git")
	u, err := url.Parse(s.URL("r.git"))
	require.NoError(t, err)
	u.User = url.UserPassword("alice", "pw")

	sha := CommitFromClone(t, u.String(), "main", "a/b.txt", "hello\n", "first\n\nbody")
	assert.Equal(t, sha, Head(t, dir, "main"))
	sha2 := CommitFromClone(t, u.String(), "main", "c.txt", "more", "second")
	log := Log(t, dir, "main")
	require.Len(t, log, 2)
	assert.Equal(t, sha2, log[0].SHA)
	assert.Equal(t, []string{sha}, log[0].Parents)
	assert.Equal(t, "first\n\nbody\n", log[1].Message) // git commit -m adds the newline
	assert.Equal(t, "Someone Else <someone@example.com>", log[1].Author)
	got, ok := ShowFile(t, dir, "main", "a/b.txt")
	assert.True(t, ok)
	assert.Equal(t, "hello\n", string(got))
	_, ok = ShowFile(t, dir, "main", "nope")
	assert.False(t, ok)
	assert.Equal(t, []string{"a/b.txt", "c.txt"}, Files(t, dir, "main"))
	assert.Equal(t, "", Head(t, dir, "other"))
	assert.Nil(t, Log(t, dir, "other"))
}

func TestServerAuthAndDown(t *testing.T) {
	s := NewServer(t, "", "alice", "pw")
	s.NewRepo(t, "r.git")
	get := func(user, pass string) int {
		req, err := http.NewRequest(http.MethodGet, s.URL("r.git")+"/info/refs?service=git-upload-pack", nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("alice", "pw"))
	assert.Equal(t, http.StatusUnauthorized, get("", ""))
	assert.Equal(t, http.StatusUnauthorized, get("alice", "wrong"))
	assert.Equal(t, http.StatusUnauthorized, get("bob", "pw"))
	s.SetPassword("new")
	assert.Equal(t, http.StatusUnauthorized, get("alice", "pw"))
	assert.Equal(t, http.StatusOK, get("alice", "new"))
	s.SetDown(true)
	assert.Equal(t, http.StatusServiceUnavailable, get("alice", "new"))
	s.SetDown(false)
	assert.Equal(t, http.StatusOK, get("alice", "new"))
}
