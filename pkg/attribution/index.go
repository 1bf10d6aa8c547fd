package attribution

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/gitsave/gitsave/pkg/save"
)

// Defaults for Options.
const (
	DefaultTTL            = 30 * time.Second
	DefaultMaxFactsPerKey = 64
)

// Options tune an Index; zero values take the defaults.
type Options struct {
	// TTL bounds how long an unconsumed fact can explain an event. A fact whose write
	// was a no-op or failed never meets its event; the TTL stops it from being taken
	// by some later, unrelated write's event on the same object.
	TTL time.Duration
	// MaxFactsPerKey caps unconsumed facts per object (oldest dropped first), so a
	// hot object cannot grow memory without bound inside one TTL.
	MaxFactsPerKey int
}

// Index holds admitted, not yet observed facts. It is safe for concurrent use and
// never blocks beyond a short mutex section.
//
// Matching rules (Match/MatchEvent): among the facts for the event's object with the
// event's operation, not expired (age <= TTL) and admitted at or before the event was
// observed (a later admission cannot explain it), and whose content fingerprint is
// compatible with the event's, the OLDEST is taken and consumed. For CREATE, facts
// recorded with the exact name win; otherwise a generateName fact in the same
// group/resource/namespace whose prefix starts the name is taken, oldest first.
type Index struct {
	clock     clock.PassiveClock
	ttl       time.Duration
	maxPerKey int

	mu     sync.Mutex
	nextID uint64
	// byKey holds each object's facts in admission order. Facts of generateName
	// creates live under their key with Name "".
	byKey     map[save.EditKey][]Fact
	held      int
	lastSweep time.Time
}

// NewIndex returns an empty index reading time from clk.
func NewIndex(clk clock.PassiveClock, opts Options) *Index {
	registerMetrics()
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxFactsPerKey <= 0 {
		opts.MaxFactsPerKey = DefaultMaxFactsPerKey
	}
	return &Index{
		clock:     clk,
		ttl:       opts.TTL,
		maxPerKey: opts.MaxFactsPerKey,
		byKey:     map[save.EditKey][]Fact{},
		lastSweep: clk.Now(),
	}
}

// Record stores f, stamping its admission Time and ID. A fact with neither a name nor
// a generateName could explain any create, so it is ignored.
func (x *Index) Record(f Fact) {
	if f.Key.Name == "" && f.GenerateName == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.clock.Now()
	x.maybeSweep(now)
	x.nextID++
	f.ID, f.Time = x.nextID, now
	if f.Key.Name != "" {
		f.GenerateName = "" // the exact name is the stronger evidence
	}

	facts := x.prune(f.Key, now)
	if len(facts) >= x.maxPerKey {
		drop := len(facts) - x.maxPerKey + 1
		facts = slices.Delete(facts, 0, drop)
		x.held -= drop
		factsHeld.Add(-float64(drop))
		factsExpired.WithLabelValues("overflow").Add(float64(drop))
	}
	x.byKey[f.Key] = append(facts, f)
	x.held++
	factsHeld.Inc()
	factsRecorded.WithLabelValues(f.Operation).Inc()
}

// Match is MatchEvent without a content fingerprint.
func (x *Index) Match(key save.EditKey, op string, observed time.Time) (save.Author, bool) {
	return x.MatchEvent(Event{Key: key, Operation: op, Observed: observed})
}

// MatchEvent takes and consumes the fact explaining e (see Index for the rules). A
// miss counts as an unattributed event. Call it once per watch event that reflects a
// write to the mirror: ADDED and DELETED (not replays of an initial list or relist)
// and MODIFIED whose mirrored bytes changed. Do not call it for events the ingest
// discards as unchanged: the webhook records no fact for such writes, and a stray
// call could take the fact of another write.
func (x *Index) MatchEvent(e Event) (save.Author, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.clock.Now()
	x.maybeSweep(now)
	observed := e.Observed
	if observed.IsZero() {
		observed = now
	}
	ok := func(f Fact) bool {
		return f.Operation == e.Operation && !f.Time.After(observed) && compatible(f.Content, e.Content)
	}

	user, found := x.take(e.Key, now, ok)
	if !found && e.Operation == OpCreate && e.Key.Name != "" {
		gk := e.Key
		gk.Name = ""
		user, found = x.take(gk, now, func(f Fact) bool {
			return f.GenerateName != "" && strings.HasPrefix(e.Key.Name, f.GenerateName) && ok(f)
		})
	}
	if !found {
		eventsUnattributed.WithLabelValues(e.Operation).Inc()
		return save.Author{}, false
	}
	factsMatched.WithLabelValues(e.Operation).Inc()
	return user, true
}

// take removes and returns the oldest live fact under key that satisfies ok.
func (x *Index) take(key save.EditKey, now time.Time, ok func(Fact) bool) (save.Author, bool) {
	facts := x.prune(key, now)
	i := slices.IndexFunc(facts, ok)
	if i < 0 {
		return save.Author{}, false
	}
	user := facts[i].User
	x.store(key, slices.Delete(facts, i, i+1))
	x.held--
	factsHeld.Dec()
	return user, true
}

// Pending returns the keys of author's facts that are admitted but not yet observed
// (nor expired) and pass filter (nil passes all), in admission order, one entry per
// fact: an object edited twice appears twice. This is the CommitRequest ordering
// barrier. A generateName create whose name was unknown at admission appears with
// Name "".
func (x *Index) Pending(author string, filter func(save.EditKey) bool) []save.EditKey {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.clock.Now()
	var mine []Fact
	for key := range x.byKey {
		for _, f := range x.prune(key, now) {
			if f.User.Username == author && (filter == nil || filter(f.Key)) {
				mine = append(mine, f)
			}
		}
	}
	slices.SortFunc(mine, func(a, b Fact) int { return cmp.Compare(a.ID, b.ID) })
	keys := make([]save.EditKey, len(mine))
	for i, f := range mine {
		keys[i] = f.Key
	}
	return keys
}

// Sweep drops every expired fact. Record and Match also sweep lazily at most once per
// TTL, so calling Sweep is optional; it bounds memory on an idle index sooner.
func (x *Index) Sweep() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sweep(x.clock.Now())
}

// Len returns how many facts are held (including expired ones not yet swept).
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.held
}

func (x *Index) maybeSweep(now time.Time) {
	if now.Sub(x.lastSweep) >= x.ttl {
		x.sweep(now)
	}
}

func (x *Index) sweep(now time.Time) {
	for key := range x.byKey {
		x.prune(key, now)
	}
	x.lastSweep = now
}

// prune drops key's expired facts (they are the oldest, facts being in admission
// order) and returns the rest.
func (x *Index) prune(key save.EditKey, now time.Time) []Fact {
	facts := x.byKey[key]
	n := 0
	for n < len(facts) && x.expired(facts[n], now) {
		n++
	}
	if n > 0 {
		facts = slices.Delete(facts, 0, n)
		x.held -= n
		factsHeld.Add(-float64(n))
		factsExpired.WithLabelValues("ttl").Add(float64(n))
		x.store(key, facts)
	}
	return facts
}

func (x *Index) store(key save.EditKey, facts []Fact) {
	if len(facts) == 0 {
		delete(x.byKey, key)
		return
	}
	x.byKey[key] = facts
}

func (x *Index) expired(f Fact, now time.Time) bool {
	return now.Sub(f.Time) > x.ttl
}
