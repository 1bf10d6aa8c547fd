package git

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Push and fetch errors fall in three classes. The worker reacts differently to
// each, so they are sentinels usable with errors.Is:
//   - ErrRejected: the remote branch is not where we thought; fetch, reset, replay.
//   - ErrAuth: credentials are missing, wrong or not allowed; retrying will not help.
//   - anything else: transient (network, 5xx, timeouts); retry with backoff.
var (
	ErrRejected = errors.New("git: push rejected: remote branch moved")
	ErrAuth     = errors.New("git: authentication or authorization failed")
)

// IsTransient reports whether err is worth retrying unchanged.
func IsTransient(err error) bool {
	return err != nil && !errors.Is(err, ErrRejected) && !errors.Is(err, ErrAuth)
}

// classify wraps a transport error with ErrAuth when it is one, keeping the
// original in the chain for errors.Is/As.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if isAuthError(err) {
		return fmt.Errorf("git %s: %w: %w", op, ErrAuth, err)
	}
	return fmt.Errorf("git %s: %w", op, err)
}

func isAuthError(err error) bool {
	if errors.Is(err, transport.ErrAuthenticationRequired) ||
		errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, transport.ErrInvalidAuthMethod) {
		return true
	}
	// The ssh transport returns golang.org/x/crypto/ssh errors as plain strings.
	msg := err.Error()
	for _, s := range []string{"unable to authenticate", "knownhosts: key mismatch", "knownhosts: key is unknown"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// staleReasons are receive-pack "ng" reasons that mean the ref was not where the
// command said (someone pushed in between), or that the pack did not match what
// the remote has; both are cured by fetch + reset + replay.
var staleReasons = []string{
	"failed to update ref", "failed to lock", "cannot lock ref", "stale info",
	"fetch first", "non-fast-forward", "already exists", "missing necessary objects",
}

// classifyReport turns a receive-pack answer into ErrRejected or a transient error.
func classifyReport(rs *packp.ReportStatus, err error) error {
	if rs != nil {
		if rs.UnpackStatus != "ok" {
			return fmt.Errorf("git push: remote could not unpack: %s", rs.UnpackStatus)
		}
		for _, cs := range rs.CommandStatuses {
			if cs.Status == "ok" {
				continue
			}
			for _, s := range staleReasons {
				if strings.Contains(cs.Status, s) {
					return fmt.Errorf("%w: %s %s", ErrRejected, cs.ReferenceName, cs.Status)
				}
			}
			return fmt.Errorf("git push: remote refused %s: %s", cs.ReferenceName, cs.Status)
		}
	}
	return classify("push", err)
}
