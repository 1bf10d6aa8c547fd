package git

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func TestAuthFromSecretHTTP(t *testing.T) {
	const url = "https://git.example.com/org/repo.git"
	b := func(s string) []byte { return []byte(s) }
	for name, tc := range map[string]struct {
		data    map[string][]byte
		want    *githttp.BasicAuth
		wantErr string
	}{
		"nothing":             {data: nil},
		"empty map":           {data: map[string][]byte{}},
		"username+password":   {data: map[string][]byte{"username": b("u"), "password": b("p")}, want: &githttp.BasicAuth{Username: "u", Password: "p"}},
		"token":               {data: map[string][]byte{"token": b("t")}, want: &githttp.BasicAuth{Username: "git", Password: "t"}},
		"token with username": {data: map[string][]byte{"token": b("t"), "username": b("bot")}, want: &githttp.BasicAuth{Username: "bot", Password: "t"}},
		"token wins":          {data: map[string][]byte{"token": b("t"), "username": b("u"), "password": b("p")}, want: &githttp.BasicAuth{Username: "u", Password: "t"}},
		"username only":       {data: map[string][]byte{"username": b("u")}, wantErr: `has "username" but no "password" or "token"`},
		"password only":       {data: map[string][]byte{"password": b("p")}, wantErr: `has "password" but no "username"`},
		"empty values":        {data: map[string][]byte{"username": b("u"), "password": b("")}, wantErr: `no "password"`},
		"ssh key for https":   {data: map[string][]byte{"ssh-privatekey": b("k")}, wantErr: `needs secret keys "username"+"password" or "token"`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := AuthFromSecret(url, tc.data)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}

	got, err := AuthFromSecret("file:///srv/repo.git", map[string][]byte{"token": b("t")})
	require.NoError(t, err)
	assert.Nil(t, got, "local repositories need no credentials")
	_, err = AuthFromSecret("ftp://x/y", map[string][]byte{"token": b("t")})
	assert.ErrorContains(t, err, "unsupported")
}

func TestAuthFromSecretSSH(t *testing.T) {
	_, clientKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(clientKey, "")
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(block)

	hostPub := newSSHPublicKey(t)
	otherPub := newSSHPublicKey(t)
	knownHosts := []byte(knownhosts.Line([]string{"[git.example.com]:2222"}, hostPub) + "\n")
	const url = "ssh://deploy@git.example.com:2222/org/repo.git"

	_, err = AuthFromSecret(url, map[string][]byte{"ssh-privatekey": keyPEM})
	require.ErrorContains(t, err, `"known_hosts"`)
	require.ErrorContains(t, err, "refusing")
	_, err = AuthFromSecret(url, map[string][]byte{"known_hosts": knownHosts})
	require.ErrorContains(t, err, `needs secret key "ssh-privatekey"`)
	_, err = AuthFromSecret(url, map[string][]byte{"username": []byte("u"), "password": []byte("p")})
	require.ErrorContains(t, err, `needs secret key "ssh-privatekey"`)
	_, err = AuthFromSecret(url, map[string][]byte{"ssh-privatekey": []byte("junk"), "known_hosts": knownHosts})
	require.ErrorContains(t, err, `"ssh-privatekey"`)

	auth, err := AuthFromSecret(url, map[string][]byte{"ssh-privatekey": keyPEM, "known_hosts": knownHosts})
	require.NoError(t, err)
	keys, ok := auth.(*gitssh.PublicKeys)
	require.True(t, ok)
	assert.Equal(t, "deploy", keys.User, "user from the URL")
	assert.Equal(t, []string{ssh.KeyAlgoED25519}, keys.HostKeyAlgorithms)
	addr := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 2222}
	assert.NoError(t, keys.HostKeyCallback("git.example.com:2222", addr, hostPub))
	assert.Error(t, keys.HostKeyCallback("git.example.com:2222", addr, otherPub), "wrong host key")
	assert.Error(t, keys.HostKeyCallback("evil.example.com:2222", addr, hostPub), "unknown host")

	auth, err = AuthFromSecret("ssh://git.example.com/org/repo.git", map[string][]byte{"ssh-privatekey": keyPEM, "known_hosts": knownHosts})
	require.NoError(t, err)
	assert.Equal(t, "git", auth.(*gitssh.PublicKeys).User)
}

func newSSHPublicKey(t *testing.T) ssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	return k
}
