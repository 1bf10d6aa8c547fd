package commitrequest

import (
	"bytes"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
)

// eventObject is the object of one recorded change as watchers receive it. The store
// makes one per change and every watcher that is sent the change gets the same one,
// so the watch server, which encodes through runtime.CacheableObject, serialises the
// change once per encoding (media type, version, Table options and event type are all
// part of the encoder's identifier) instead of once per watcher. The encodings live
// as long as the change is in the history, so watches that resume and replay it reuse
// them too; a replayed Table row therefore shows the Age it had when first encoded.
//
// Sharing is safe because cr is never written once the change is recorded: the store
// replaces an object's pointer on every change and never mutates a stored one (see
// store). Whoever needs an object to work on gets a copy from GetObject.
//
// It deliberately implements no metav1.Object: the watch handler reads metadata only
// from bookmarks, which stay plain objects, and from GetObject's copy (Table and
// PartialObjectMetadata conversion). Metadata setters here could only write to a copy
// or to the shared object, both wrong.
type eventObject struct {
	cr *gitsave.CommitRequest

	mu        sync.RWMutex
	encodings []*encoding // a handful at most: one per encoder that served the change
}

// encoding is one serialisation of an eventObject, made once.
type encoding struct {
	id   runtime.Identifier
	once sync.Once
	raw  []byte
	err  error
}

var _ runtime.CacheableObject = &eventObject{}

func newEventObject(cr *gitsave.CommitRequest) *eventObject { return &eventObject{cr: cr} }

// CacheEncode writes the encoding for id, producing it with encode on the first call
// for id; concurrent callers for the same id wait for that one encoding.
func (o *eventObject) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	e := o.encoding(id)
	e.once.Do(func() {
		var buf bytes.Buffer
		// encode owns its object (the versioning codec sets and restores the kind
		// on it), so it gets a copy rather than the shared one.
		e.err = encode(o.GetObject(), &buf)
		e.raw = buf.Bytes()
	})
	if e.err != nil {
		return e.err
	}
	if s, ok := w.(runtime.Splice); ok {
		s.Splice(e.raw) // raw is never written again, so it may be shared
		return nil
	}
	_, err := w.Write(e.raw)
	return err
}

func (o *eventObject) encoding(id runtime.Identifier) *encoding {
	o.mu.RLock()
	e := o.find(id)
	o.mu.RUnlock()
	if e != nil {
		return e
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.find(id); e != nil {
		return e
	}
	e = &encoding{id: id}
	o.encodings = append(o.encodings, e)
	return e
}

func (o *eventObject) find(id runtime.Identifier) *encoding {
	for _, e := range o.encodings {
		if e.id == id {
			return e
		}
	}
	return nil
}

// GetObject returns a copy the caller owns, as runtime.CacheableObject requires.
func (o *eventObject) GetObject() runtime.Object { return o.cr.DeepCopy() }

// GetObjectKind returns a copy of the object's kind, so setting one (as encoders do on
// the objects they are given) cannot write to the shared object.
func (o *eventObject) GetObjectKind() schema.ObjectKind {
	kind := o.cr.TypeMeta
	return &kind
}

// DeepCopyObject copies the object; the copy starts with no encodings.
func (o *eventObject) DeepCopyObject() runtime.Object { return newEventObject(o.cr.DeepCopy()) }
