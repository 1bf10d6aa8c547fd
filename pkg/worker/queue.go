package worker

import "sync"

// fifo is the worker's one input queue: unbounded, so producers (informers, the
// registry, timers) never block on a busy worker, and strictly ordered, so an
// edit enqueued before a Save is handled before it.
type fifo struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []any
	closed bool
}

func newFIFO() *fifo {
	q := &fifo{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// add appends an item; false once the queue is closed.
func (q *fifo) add(it any) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, it)
	q.cond.Signal()
	return true
}

// pop blocks for the next item. After close it still returns what was queued,
// then false.
func (q *fifo) pop() (any, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return nil, false
	}
	it := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return it, true
}

func (q *fifo) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *fifo) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}
