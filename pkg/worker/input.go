package worker

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gitsave/gitsave/pkg/git"
	"github.com/gitsave/gitsave/pkg/save"
)

// Event is one observed write of a mirrored object, already sanitized and
// placed: Path is the repository path (under the target's folder).
type Event struct {
	// Target is the GitTarget's namespaced key, "namespace/name".
	Target string
	// Path is the repository path of the file, slash-separated.
	Path string
	// Content is the file's new content; nil deletes the file.
	Content []byte
	// Author made the edit (from the admission fact, or the fallback author).
	Author save.Author
	// Key identifies the write for CommitRequest barriers; zero when unknown.
	Key save.EditKey
	// Observed is when the watch event was seen.
	Observed time.Time
}

// ResyncBatch is the live state of everything routed to a target. The worker
// makes the files under the target's folder equal to it (adds, updates,
// deletes) in one commit by the committer, after finalizing any open window.
type ResyncBatch struct {
	// Target is the GitTarget's namespaced key, "namespace/name".
	Target string
	// Desired maps repository paths (under the target's folder) to contents.
	Desired map[string][]byte
}

// TargetConfig is a GitTarget as the worker needs it. Sending it again
// replaces the previous configuration of that target.
type TargetConfig struct {
	// Name is the GitTarget's namespaced key, "namespace/name".
	Name string
	// Path is the folder in the repository; "" is the root.
	Path string
	// CommitWindow is the silence after which an open window is committed;
	// zero disables the silence timer.
	CommitWindow time.Duration
	// MaxWindowEvents commits a window once it holds this many events
	// (0: DefaultMaxWindowEvents).
	MaxWindowEvents int
	// AuthorEmailTemplate makes an author's email; "{username}" is replaced
	// ("" : DefaultAuthorEmailTemplate).
	AuthorEmailTemplate string
	// Committer commits every write and authors resync commits.
	Committer git.Identity
}

// Defaults for TargetConfig fields left empty.
const (
	DefaultMaxWindowEvents     = 1000
	DefaultAuthorEmailTemplate = "{username}@users.noreply.gitsave.dev"
)

// The internal items of the FIFO. Event, ResyncBatch and TargetConfig are
// queued as they are.
type (
	attachItem       struct{ req save.Request }
	cancelItem       struct{ uid types.UID }
	removeTargetItem struct{ name string }
	// tickItem is what a timer firing enqueues: due deadlines are re-read
	// from the state, so a stale tick is harmless.
	tickItem struct{}
	stopItem struct{}
	// syncItem is answered once the queue is empty (see Worker.Sync).
	syncItem struct{ done chan struct{} }
)
