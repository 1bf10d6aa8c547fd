package worker

import (
	"fmt"
	"strings"

	"github.com/gitsave/gitsave/pkg/git"
)

// Trailers naming the CommitRequest a commit was made for (ARCHITECTURE §7):
// after a restart, resolved requests are rebuilt from the branch history.
const (
	TrailerCommitRequest    = "Commit-Request"
	TrailerCommitRequestUID = "Commit-Request-UID"
)

// maxListedFiles caps the file list of a generated message.
const maxListedFiles = 50

// requestMessage is the commit message of a write carrying a request: the
// request's message byte for byte, a blank line, then the two trailers. It is
// built by hand rather than with git.WithTrailers, which trims the message and
// merges into a trailer-like last paragraph: here MessageWithoutTrailers always
// gives back exactly what the user wrote.
func requestMessage(msg, namespace, name, uid string) string {
	return msg + "\n\n" + TrailerCommitRequest + ": " + namespace + "/" + name + "\n" +
		TrailerCommitRequestUID + ": " + uid + "\n"
}

// MessageWithoutTrailers returns a commit message without the CommitRequest
// trailers gitsave appends: for a commit made for a CommitRequest with a
// message, this is spec.message byte for byte. Other messages come back as
// they are.
func MessageWithoutTrailers(full string) string {
	body, _, _, ok := splitRequestTrailers(full)
	if !ok {
		return full
	}
	return body
}

// RequestTrailers returns the "namespace/name" and UID of the CommitRequest a
// commit message names, if it ends with gitsave's trailers.
func RequestTrailers(full string) (ref, uid string, ok bool) {
	_, ref, uid, ok = splitRequestTrailers(full)
	return ref, uid, ok
}

func splitRequestTrailers(full string) (body, ref, uid string, ok bool) {
	i := strings.LastIndex(full, "\n\n"+TrailerCommitRequest+": ")
	if i < 0 {
		return "", "", "", false
	}
	lines := strings.Split(strings.TrimSuffix(full[i+2:], "\n"), "\n")
	if len(lines) != 2 {
		return "", "", "", false
	}
	ref, ok1 := strings.CutPrefix(lines[0], TrailerCommitRequest+": ")
	uid, ok2 := strings.CutPrefix(lines[1], TrailerCommitRequestUID+": ")
	if !ok1 || !ok2 {
		return "", "", "", false
	}
	return full[:i], ref, uid, true
}

// generatedMessage describes a write without a user message: a subject
// counting the changes, then the file list (capped).
func generatedMessage(subject string, changes []git.Change) string {
	var sb strings.Builder
	sb.WriteString(subject)
	if len(changes) > 0 {
		sb.WriteString("\n\n")
	}
	for i, c := range changes {
		if i == maxListedFiles {
			fmt.Fprintf(&sb, "… and %d more\n", len(changes)-maxListedFiles)
			break
		}
		if c.Delete {
			fmt.Fprintf(&sb, "- %s (deleted)\n", c.Path)
		} else {
			fmt.Fprintf(&sb, "- %s\n", c.Path)
		}
	}
	return sb.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func windowSubject(username string, n int) string {
	return fmt.Sprintf("gitsave: %s by %s", plural(n, "change"), username)
}

func resyncSubject(target string, n int) string {
	return fmt.Sprintf("gitsave: resync %s: %s", target, plural(n, "change"))
}
