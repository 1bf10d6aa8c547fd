package git

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Identity is a commit signature's name and email.
type Identity struct{ Name, Email string }

// Change sets (Content != nil, may be empty) or deletes (Delete) one file.
// Path is relative to the repository root and slash-separated.
type Change struct {
	Path    string
	Content []byte
	Delete  bool
}

// CommitResult describes what Commit did.
type CommitResult struct {
	SHA plumbing.Hash // the new commit; Tip() when Changed is false
	// Changed is false when the changes left the tree as it was: no commit.
	Changed bool
	// FilesChanged counts paths whose content actually changed.
	FilesChanged int
	// ObjectsWritten counts the objects this commit added to the next push:
	// one blob per new content, one tree per folder on a changed path (root
	// included), and the commit.
	ObjectsWritten int
}

// BlobHash is the git object id of a file with this content, so a caller can
// compare with ListFiles without reading the file.
func BlobHash(content []byte) plumbing.Hash {
	return plumbing.ComputeHash(plumbing.BlobObject, content)
}

// Commit applies changes on top of Tip and advances the local branch. It reads
// and writes only the trees on the changed paths: cost grows with the number of
// changed files times their depth, never with the size of the repository.
// Folders left empty by deletes disappear. The message is used byte for byte.
func (r *Repo) Commit(changes []Change, author, committer Identity, when time.Time, message string) (CommitResult, error) {
	au, err := signature("author", author, when)
	if err != nil {
		return CommitResult{}, err
	}
	co, err := signature("committer", committer, when)
	if err != nil {
		return CommitResult{}, err
	}
	grouped, err := groupChanges(changes)
	if err != nil {
		return CommitResult{}, err
	}
	b := &treeBuilder{objs: r.objs}
	root, err := b.apply(r.tipTree, grouped, "")
	if err != nil {
		return CommitResult{}, err
	}
	if root.IsZero() && !r.tip.IsZero() {
		// Every file was deleted: git still needs a (empty) root tree.
		root = b.add(newRawObject(plumbing.TreeObject, nil))
	}
	if root.IsZero() || root == r.tipTree {
		return CommitResult{SHA: r.tip}, nil
	}

	c := &object.Commit{Author: au, Committer: co, Message: message, TreeHash: root}
	if !r.tip.IsZero() {
		c.ParentHashes = []plumbing.Hash{r.tip}
	}
	obj := &rawObject{}
	if err := c.Encode(obj); err != nil {
		return CommitResult{}, fmt.Errorf("git: encode commit: %w", err)
	}
	sha := b.add(obj)
	for _, o := range b.created {
		r.objs.add(o)
	}
	r.tip, r.tipTree = sha, root
	return CommitResult{SHA: sha, Changed: true, FilesChanged: b.filesChanged, ObjectsWritten: len(b.created)}, nil
}

// identityCleaner drops what git refuses in an identity. Built once: a
// Replacer's set-up costs more than using it.
var identityCleaner = strings.NewReplacer("<", "", ">", "", "\n", "", "\r", "", "\x00", "")

// signature builds a commit signature, dropping the characters git itself
// refuses in identities (they would corrupt the commit header).
func signature(role string, id Identity, when time.Time) (object.Signature, error) {
	s := object.Signature{
		Name:  strings.TrimSpace(identityCleaner.Replace(id.Name)),
		Email: strings.TrimSpace(identityCleaner.Replace(id.Email)),
		When:  when,
	}
	if s.Name == "" {
		return s, fmt.Errorf("git: %s name is empty", role)
	}
	return s, nil
}

// WithTrailers appends git trailers ("Key: value" lines) to msg in canonical
// form: after a blank line, or directly below an existing trailer block.
// Newlines inside keys or values are replaced by spaces.
func WithTrailers(msg string, kv ...[2]string) string {
	if len(kv) == 0 {
		return msg
	}
	var sb strings.Builder
	body := strings.TrimRight(msg, "\n")
	sb.WriteString(body)
	switch {
	case body == "":
	case endsWithTrailers(body):
		sb.WriteString("\n")
	default:
		sb.WriteString("\n\n")
	}
	for _, p := range kv {
		sb.WriteString(strings.TrimSpace(trailerOneLine.Replace(p[0])))
		sb.WriteString(": ")
		sb.WriteString(strings.TrimSpace(trailerOneLine.Replace(p[1])))
		sb.WriteString("\n")
	}
	return sb.String()
}

var trailerOneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// endsWithTrailers reports whether the last paragraph of msg (never the subject)
// is made only of "Token: value" lines.
func endsWithTrailers(msg string) bool {
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return false
	}
	for _, line := range strings.Split(msg[i+2:], "\n") {
		k, _, ok := strings.Cut(line, ": ")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return false
		}
	}
	return true
}
