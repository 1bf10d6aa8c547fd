package commitrequest

import (
	"sort"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
)

// store is the in-memory home of CommitRequests: the objects, one global
// resourceVersion counter, a bounded history of changes for watch resumption, and the
// registered watchers. Stored objects are never mutated in place: every change stores
// a new copy (create, replace, mutateByUID and removeLocked each pass record an object
// no one else holds, and record's resourceVersion stamp is its last write), and
// readers get copies (get, list, and send for initial events). So an object in
// objects or history stays as it was, and watchers can share one eventObject per
// change.
type store struct {
	mu       sync.RWMutex
	rv       uint64
	objects  map[string]*entry
	byUID    map[types.UID]string
	history  []change
	maxHist  int
	expired  uint64 // highest resourceVersion no longer kept in history
	watchers map[*watcher]struct{}
}

type entry struct {
	obj *gitsave.CommitRequest
	// terminalAt is when the request reached its outcome; zero while in progress.
	terminalAt time.Time
}

// change is one event in the history. prev is the object before a modification, so a
// watcher can turn selector transitions into ADDED or DELETED.
type change struct {
	typ  watch.EventType
	obj  *eventObject
	prev *gitsave.CommitRequest
	rv   uint64
}

func newStore(historySize int) *store {
	return &store{
		objects:  map[string]*entry{},
		byUID:    map[types.UID]string{},
		maxHist:  historySize,
		watchers: map[*watcher]struct{}{},
	}
}

func sortEntries(es []*entry) {
	sort.Slice(es, func(i, j int) bool {
		return key(es[i].obj.Namespace, es[i].obj.Name) < key(es[j].obj.Namespace, es[j].obj.Name)
	})
}

func key(namespace, name string) string { return namespace + "/" + name }

func formatRV(rv uint64) string { return strconv.FormatUint(rv, 10) }

// currentRV is the resourceVersion of the last change.
func (s *store) currentRV() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

func (s *store) get(namespace, name string) (*gitsave.CommitRequest, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.objects[key(namespace, name)]
	if !ok {
		return nil, false
	}
	return e.obj.DeepCopy(), true
}

// list returns copies of the objects in namespace ("" for all) that match, sorted by
// namespace and name, and the resourceVersion they were read at.
func (s *store) list(namespace string, match func(*gitsave.CommitRequest) bool) ([]gitsave.CommitRequest, uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []gitsave.CommitRequest
	for _, e := range sortedEntries(s.objects) {
		if (namespace == "" || e.obj.Namespace == namespace) && match(e.obj) {
			out = append(out, *e.obj.DeepCopy())
		}
	}
	return out, s.rv
}

// create stores a new object, stamping its resourceVersion.
func (s *store) create(obj *gitsave.CommitRequest) (*gitsave.CommitRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(obj.Namespace, obj.Name)
	if _, exists := s.objects[k]; exists {
		return nil, apierrors.NewAlreadyExists(gitsave.Resource("commitrequests"), obj.Name)
	}
	stored := obj.DeepCopy()
	s.record(watch.Added, stored, nil)
	s.objects[k] = &entry{obj: stored}
	s.byUID[stored.UID] = k
	return stored.DeepCopy(), nil
}

// replace swaps in a new version of an object if the stored one is still at
// expectedRV; otherwise it is a conflict and the caller retries or reports.
func (s *store) replace(obj *gitsave.CommitRequest, expectedRV string) (*gitsave.CommitRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.objects[key(obj.Namespace, obj.Name)]
	if !ok {
		return nil, apierrors.NewNotFound(gitsave.Resource("commitrequests"), obj.Name)
	}
	if e.obj.ResourceVersion != expectedRV {
		return nil, conflict(obj.Name)
	}
	stored := obj.DeepCopy()
	s.record(watch.Modified, stored, e.obj)
	e.obj = stored
	return stored.DeepCopy(), nil
}

// remove deletes an object if it is still at expectedRV.
func (s *store) remove(namespace, name, expectedRV string) (*gitsave.CommitRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(namespace, name)
	e, ok := s.objects[k]
	if !ok {
		return nil, apierrors.NewNotFound(gitsave.Resource("commitrequests"), name)
	}
	if e.obj.ResourceVersion != expectedRV {
		return nil, conflict(name)
	}
	return s.removeLocked(k, e), nil
}

func (s *store) removeLocked(k string, e *entry) *gitsave.CommitRequest {
	last := e.obj.DeepCopy()
	s.record(watch.Deleted, last, nil)
	delete(s.objects, k)
	delete(s.byUID, e.obj.UID)
	return last.DeepCopy()
}

// mutateByUID applies fn to a copy of the object with that UID and stores the result
// if fn reports a change; terminal says whether the object reached its outcome. It
// returns false when no such object exists (it was deleted meanwhile).
func (s *store) mutateByUID(uid types.UID, fn func(cr *gitsave.CommitRequest) (changed, terminal bool), now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.byUID[uid]
	if !ok {
		return false
	}
	e := s.objects[k]
	next := e.obj.DeepCopy()
	changed, terminal := fn(next)
	if terminal && e.terminalAt.IsZero() {
		e.terminalAt = now
	}
	if changed {
		s.record(watch.Modified, next, e.obj)
		e.obj = next
	}
	return true
}

// isTerminal says whether the request with that UID has reached its outcome.
func (s *store) isTerminal(uid types.UID) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.byUID[uid]
	return ok && !s.objects[k].terminalAt.IsZero()
}

// expire removes requests that reached their outcome before cutoff.
func (s *store) expire(cutoff time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, e := range s.objects {
		if !e.terminalAt.IsZero() && e.terminalAt.Before(cutoff) {
			s.removeLocked(k, e)
			n++
		}
	}
	return n
}

// record stamps obj with the next resourceVersion, appends the change to the bounded
// history and hands it to every watcher. Called with s.mu held.
func (s *store) record(typ watch.EventType, obj, prev *gitsave.CommitRequest) {
	s.rv++
	obj.ResourceVersion = formatRV(s.rv)
	c := change{typ: typ, obj: newEventObject(obj), prev: prev, rv: s.rv}
	s.history = append(s.history, c)
	// Compact only when twice the bound is reached, so the copy is amortised: at least
	// maxHist changes are always kept.
	if len(s.history) >= 2*s.maxHist {
		drop := len(s.history) - s.maxHist
		s.expired = s.history[drop-1].rv
		s.history = append(s.history[:0:0], s.history[drop:]...)
	}
	for w := range s.watchers {
		if !w.offer(c) {
			// A watcher that cannot keep up is closed; its client re-watches from
			// the last resourceVersion it saw.
			delete(s.watchers, w)
			w.overflow()
		}
	}
}

func conflict(name string) error {
	return apierrors.NewConflict(gitsave.Resource("commitrequests"), name,
		errObjectModified)
}

type constError string

func (e constError) Error() string { return string(e) }

const errObjectModified = constError("the object has been modified; please apply your changes to the latest version and try again")
