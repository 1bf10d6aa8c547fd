// Package save is the narrow seam between the CommitRequest registry and the branch
// workers: the registry hands a Request over with Attach (or takes it back with
// Cancel), and the worker reports every step of its progress back through a Reporter.
// Neither side knows the other's internals.
package save

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Author is the authenticated user a request (or an edit) came from.
type Author struct {
	Username string
	UID      string
	Groups   []string
}

// EditKey identifies one admitted write that must be seen on the watch before the
// request's window closes (the ordering barrier).
type EditKey struct {
	Group, Resource, Namespace, Name string
}

// Request is a CommitRequest as the worker needs it.
type Request struct {
	UID       types.UID
	Namespace string
	Name      string
	Author    Author
	// Target names the GitTarget in Namespace.
	Target  string
	Message string
	// CloseDelay keeps the window open this long after Received.
	CloseDelay time.Duration
	Received   time.Time
	// Barrier lists edits admitted before the request that the finalize waits for.
	Barrier []EditKey
}

// Progress is one step of a request: its reason is one of the v1alpha1 condition
// reasons (WaitingForEdits … Committed, NoWindowInGrace, PushFailed …).
type Progress struct {
	Reason string
	// Message is a human detail, e.g. the last push error while retrying.
	Message      string
	Branch       string
	SHA          string
	FinalizedBy  string
	FilesChanged int
}

// Saver is what the registry calls. Both calls return at once: the work happens on
// the worker's own goroutine. Attach is idempotent per UID.
type Saver interface {
	Attach(Request)
	Cancel(uid types.UID)
}

// Reporter is what the worker calls for every transition of a request.
type Reporter interface {
	Report(uid types.UID, p Progress)
}
