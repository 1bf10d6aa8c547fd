package git

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// Secret keys understood by AuthFromSecret (the first three match Kubernetes'
// basic-auth and ssh-auth Secret types).
const (
	SecretUsername   = "username"
	SecretPassword   = "password"
	SecretToken      = "token"
	SecretSSHKey     = "ssh-privatekey"
	SecretKnownHosts = "known_hosts"
)

// AuthFromSecret turns a Secret's data into credentials for url:
//   - http(s): token (user "git", or the username key if present), or
//     username + password;
//   - ssh: ssh-privatekey plus known_hosts (required: host keys are always checked);
//   - no data (or a file:// URL): nil, no credentials.
func AuthFromSecret(url string, data map[string][]byte) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, fmt.Errorf("git: invalid URL: %w", err)
	}
	has := func(k string) bool { return len(data[k]) > 0 }
	if len(data) == 0 || ep.Protocol == "file" {
		return nil, nil
	}
	switch ep.Protocol {
	case "http", "https":
		user := string(data[SecretUsername])
		switch {
		case has(SecretToken):
			if user == "" {
				user = "git"
			}
			return &githttp.BasicAuth{Username: user, Password: string(data[SecretToken])}, nil
		case has(SecretUsername) && has(SecretPassword):
			return &githttp.BasicAuth{Username: user, Password: string(data[SecretPassword])}, nil
		case has(SecretUsername):
			return nil, fmt.Errorf("git: secret has %q but no %q or %q", SecretUsername, SecretPassword, SecretToken)
		case has(SecretPassword):
			return nil, fmt.Errorf("git: secret has %q but no %q", SecretPassword, SecretUsername)
		default:
			return nil, fmt.Errorf("git: %s URL needs secret keys %q+%q or %q", ep.Protocol, SecretUsername, SecretPassword, SecretToken)
		}
	case "ssh":
		if !has(SecretSSHKey) {
			return nil, fmt.Errorf("git: ssh URL needs secret key %q", SecretSSHKey)
		}
		if !has(SecretKnownHosts) {
			return nil, fmt.Errorf("git: ssh URL needs secret key %q: refusing to connect without checking the server's host key", SecretKnownHosts)
		}
		user := ep.User
		if user == "" {
			user = string(data[SecretUsername])
		}
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeys(user, data[SecretSSHKey], "")
		if err != nil {
			return nil, fmt.Errorf("git: secret key %q: %w", SecretSSHKey, err)
		}
		port := ep.Port
		if port == 0 {
			port = 22
		}
		if err := setKnownHosts(keys, data[SecretKnownHosts], net.JoinHostPort(ep.Host, strconv.Itoa(port))); err != nil {
			return nil, fmt.Errorf("git: secret key %q: %w", SecretKnownHosts, err)
		}
		return keys, nil
	default:
		return nil, fmt.Errorf("git: unsupported URL scheme %q", ep.Protocol)
	}
}

// setKnownHosts makes keys check the server against known_hosts content. The
// parser only reads files, so the content goes through a temporary file that
// is removed at once (it is read eagerly).
func setKnownHosts(keys *gitssh.PublicKeys, content []byte, hostPort string) error {
	f, err := os.CreateTemp("", "gitsave-known-hosts-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	db, err := gitssh.NewKnownHostsDb(f.Name())
	if err != nil {
		return err
	}
	keys.HostKeyCallback = db.HostKeyCallback()
	// Offer only the algorithms we hold a key for, or the server may pick
	// another one and the check fails although the host is known.
	keys.HostKeyAlgorithms = db.HostKeyAlgorithms(hostPort)
	return nil
}
