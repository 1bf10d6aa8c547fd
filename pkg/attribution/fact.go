package attribution

import (
	"crypto/sha256"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/gitsave/gitsave/pkg/save"
)

// Operations, spelled as admission spells them.
const (
	OpCreate = "CREATE"
	OpUpdate = "UPDATE"
	OpDelete = "DELETE"
)

// OperationFor maps a watch event type to the admission operation that caused it.
func OperationFor(t watch.EventType) (string, bool) {
	switch t {
	case watch.Added:
		return OpCreate, true
	case watch.Modified:
		return OpUpdate, true
	case watch.Deleted:
		return OpDelete, true
	}
	return "", false
}

// Fact is one admitted write: who asked for which operation on which object.
type Fact struct {
	User      save.Author
	Operation string
	// Key names the object. Name is empty for a create with generateName whose final
	// name was not yet known at admission; GenerateName then holds the prefix.
	Key          save.EditKey
	GenerateName string
	// Time is the admission time, stamped by Index.Record from the index's clock
	// (whatever the caller put there is replaced): TTL and the "admitted before
	// observed" rule both need one clock.
	Time time.Time
	// ID is assigned by Index.Record, increasing in admission order.
	ID uint64
	// Content fingerprints the mirrored file the write produces, when known (main
	// resource CREATE/UPDATE). Zero for DELETE and subresource writes.
	Content Content
}

// Content fingerprints mirrored bytes (sanitize.Marshal output) in one apiVersion.
// The zero value means "unknown" and matches anything.
type Content struct {
	APIVersion string
	Sum        [sha256.Size]byte
}

// ContentOf fingerprints the mirrored bytes of an object served as apiVersion.
func ContentOf(apiVersion string, mirrored []byte) Content {
	return Content{APIVersion: apiVersion, Sum: sha256.Sum256(mirrored)}
}

// Known reports whether c fingerprints something.
func (c Content) Known() bool { return c.APIVersion != "" }

// compatible reports whether a fact with content f may explain an event with content
// e. Only two known fingerprints of the same apiVersion can disagree: across versions
// the bytes differ by construction, so the check is skipped rather than failing.
func compatible(f, e Content) bool {
	if !f.Known() || !e.Known() || f.APIVersion != e.APIVersion {
		return true
	}
	return f.Sum == e.Sum
}

// Event is one watch event as the ingest saw it.
type Event struct {
	Key       save.EditKey
	Operation string
	// Observed is when the informer delivered the event, on the index's clock. Zero
	// means now. Capture it at delivery, not when the event is processed later.
	Observed time.Time
	// Content is the fingerprint of the event's mirrored bytes (zero for DELETE).
	Content Content
}
