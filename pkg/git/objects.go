package git

import (
	"bytes"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// rawObject is a git object held as its content bytes, so trees can be read
// and edited without go-git decoding them or copying them again.
// It is immutable once its hash has been taken.
type rawObject struct {
	typ  plumbing.ObjectType
	data []byte
	hash plumbing.Hash // zero until first asked
}

var _ plumbing.EncodedObject = (*rawObject)(nil)

func newRawObject(t plumbing.ObjectType, data []byte) *rawObject {
	return &rawObject{typ: t, data: data}
}

func (o *rawObject) Hash() plumbing.Hash {
	if o.hash.IsZero() {
		o.hash = plumbing.ComputeHash(o.typ, o.data)
	}
	return o.hash
}
func (o *rawObject) Type() plumbing.ObjectType     { return o.typ }
func (o *rawObject) SetType(t plumbing.ObjectType) { o.typ = t }
func (o *rawObject) Size() int64                   { return int64(len(o.data)) }
func (o *rawObject) SetSize(int64)                 {}
func (o *rawObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.data)), nil
}
func (o *rawObject) Writer() (io.WriteCloser, error) { return o, nil }
func (o *rawObject) Close() error                    { return nil }

// Write appends, for encoders such as object.Commit.Encode.
func (o *rawObject) Write(p []byte) (int, error) {
	o.data = append(o.data, p...)
	o.hash = plumbing.ZeroHash
	return len(p), nil
}

// treeCacheSize bounds the raw trees kept for the next commits: the trees on
// recently changed paths, which every following commit there reads again.
// Per Repo, so per branch worker: enough for a few folders of thousands of
// objects.
const treeCacheSize = 8 * cache.MiByte

// objects is the Repo's object layer. New objects stay in memory until the
// remote has them: a commit writes nothing to the store (no file, no zlib on
// an on-disk cache), a push sends them from memory, and only then are they
// written to the store (Repo.Persist), where the next restart finds them.
// Commits dropped by ResetToRemote never reach the store at all.
type objects struct {
	st storage.Storer
	// pending: created since the remote tip, in creation order; what the next
	// push sends.
	pending      map[plumbing.Hash]*rawObject
	pendingOrder []plumbing.Hash
	// unstored: pushed, not yet written to st (store has not run yet, or
	// failed and is retried). Still read from here meanwhile.
	unstored map[plumbing.Hash]*rawObject
	trees    *cache.ObjectLRU
}

func newObjects(st storage.Storer) *objects {
	return &objects{st: st, trees: cache.NewObjectLRU(treeCacheSize)}
}

// add records a new object for the next push. An object already stored is
// still pushed: whether the remote has it cannot be told cheaply, and an
// extra object in a pack is harmless.
func (s *objects) add(o *rawObject) {
	h := o.Hash()
	if _, ok := s.pending[h]; ok {
		return
	}
	if s.pending == nil {
		s.pending = make(map[plumbing.Hash]*rawObject)
	}
	s.pending[h] = o
	s.pendingOrder = append(s.pendingOrder, h)
	if o.typ == plumbing.TreeObject {
		s.trees.Put(o)
	}
}

// dropPending forgets the unpushed objects.
func (s *objects) dropPending() {
	s.pending, s.pendingOrder = nil, nil
}

// pushed marks the pending objects as on the remote: they are no longer sent,
// and store writes them to the store.
func (s *objects) pushed() {
	for _, h := range s.pendingOrder {
		if s.unstored == nil {
			s.unstored = make(map[plumbing.Hash]*rawObject)
		}
		s.unstored[h] = s.pending[h]
	}
	s.dropPending()
}

// store writes the pushed objects to the store. On a write error the rest
// stay readable in memory and the next call retries them.
func (s *objects) store() error {
	for h, o := range s.unstored {
		if _, err := s.st.SetEncodedObject(o); err != nil {
			return fmt.Errorf("git: store pushed object %s: %w", h, err)
		}
		delete(s.unstored, h)
	}
	return nil
}

// kept reports whether object h is pushed or stored: held for good, unlike
// a pending object, which a reset drops.
func (s *objects) kept(h plumbing.Hash) bool {
	if _, ok := s.unstored[h]; ok {
		return true
	}
	return s.st.HasEncodedObject(h) == nil
}

// tree returns the raw content of tree h.
func (s *objects) tree(h plumbing.Hash) ([]byte, error) {
	if o, ok := s.trees.Get(h); ok {
		return o.(*rawObject).data, nil
	}
	o, err := s.read(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	s.trees.Put(o)
	return o.data, nil
}

// read returns object h, which must be of type t.
func (s *objects) read(t plumbing.ObjectType, h plumbing.Hash) (*rawObject, error) {
	if o, ok := s.pending[h]; ok {
		return checkType(o, t, h)
	}
	if o, ok := s.unstored[h]; ok {
		return checkType(o, t, h)
	}
	eo, err := s.st.EncodedObject(t, h)
	if err != nil {
		return nil, fmt.Errorf("git: read %s %s: %w", t, h, err)
	}
	if o, ok := eo.(*rawObject); ok { // memory storage keeps what store() gave it
		return o, nil
	}
	rd, err := eo.Reader()
	if err != nil {
		return nil, fmt.Errorf("git: read %s %s: %w", t, h, err)
	}
	defer rd.Close()
	data := make([]byte, eo.Size())
	if _, err := io.ReadFull(rd, data); err != nil {
		return nil, fmt.Errorf("git: read %s %s: %w", t, h, err)
	}
	return &rawObject{typ: eo.Type(), data: data, hash: h}, nil
}

func checkType(o *rawObject, t plumbing.ObjectType, h plumbing.Hash) (*rawObject, error) {
	if t != plumbing.AnyObject && o.typ != t {
		return nil, fmt.Errorf("git: read %s %s: %w", t, h, plumbing.ErrObjectNotFound)
	}
	return o, nil
}

// packSource serves the pending objects to go-git's pack encoder.
type packSource struct {
	storer.EncodedObjectStorer
	objs *objects
}

func (p packSource) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	return p.objs.read(t, h)
}
