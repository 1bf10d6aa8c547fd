package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gitsave/gitsave/bench/internal/results"
	"github.com/gitsave/gitsave/bench/internal/stats"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
)

// targetsRun is many GitTargets, each on its own branch of one remote (one
// branch worker each), each with several authors taking turns to edit and
// Save. A target held up by another's work shows as a per-target p99 far
// above the others.
type targetsRun struct {
	c       *cluster
	o       *options
	nss     []string
	authors []author
	tracker *tracker
	created []bool // per target: the authors' ConfigMaps exist
}

type author struct {
	kube kubernetes.Interface
	gs   versioned.Interface
}

func runTargets(ctx context.Context, c *cluster, o *options) (*results.Targets, error) {
	t := &targetsRun{c: c, o: o, tracker: newTracker(), created: make([]bool, o.targets)}
	repo := "targets-" + o.runID
	if _, err := git(ctx, "", "init", "--quiet", "--bare", "--initial-branch=main", c.repoDir(repo)); err != nil {
		return nil, err
	}
	setupStart := time.Now()
	for i := 0; i < o.targets; i++ {
		t.nss = append(t.nss, fmt.Sprintf("bench-t%03d-%s", i, o.runID))
	}
	if err := parallel(16, o.targets, func(i int) error {
		if err := c.namespace(ctx, t.nss[i]); err != nil {
			return err
		}
		return c.mirror(ctx, target{ns: t.nss[i], name: "t", url: c.repoURL(repo), branch: fmt.Sprintf("t%03d", i),
			path: fmt.Sprintf("clusters/t%03d", i), window: 10 * time.Minute, maxEvents: 1000})
	}); err != nil {
		return nil, err
	}
	if err := parallel(16, o.targets, func(i int) error { return c.waitReady(ctx, t.nss[i], "t", 5*time.Minute) }); err != nil {
		return nil, fmt.Errorf("targets not ready: %w", err)
	}
	res := &results.Targets{Targets: o.targets, Authors: o.authors, Rounds: o.rounds, SetupSeconds: time.Since(setupStart).Seconds()}
	log.Printf("targets: %d ready in %.0f s", o.targets, res.SetupSeconds)

	// One watch on every namespace follows all requests.
	ready := make(chan struct{})
	go func() {
		if err := t.tracker.run(ctx, c.adminGS, "", "gitsave.dev/bench-run="+o.runID, ready); err != nil {
			log.Printf("targets: watch: %v", err)
		}
	}()
	<-ready
	for a := 0; a < o.authors; a++ {
		cfg := c.impersonate(fmt.Sprintf("author-%d", a))
		t.authors = append(t.authors, author{kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg)})
	}

	// Paced first (people pause between saves), then back to back (as much
	// as the machine takes: the delay is then mostly queueing, and what
	// matters is that every target gets its share).
	for _, v := range []struct {
		name  string
		think time.Duration
	}{{"paced", o.targetsThink}, {"saturated", 0}} {
		if v.name == "paced" && v.think <= 0 {
			continue
		}
		run, err := t.run(ctx, v.name, v.think)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
		res.Runs = append(res.Runs, *run)
	}
	return res, nil
}

// run has every target's authors save in turn, all targets at once.
func (t *targetsRun) run(ctx context.Context, name string, think time.Duration) (*results.TargetRun, error) {
	o := t.o
	type sample struct {
		target int
		targetSample
	}
	var mu sync.Mutex
	var samples []sample
	peak := t.c.peak()
	meter := t.c.meter()
	meter.Start()
	busy0, _ := machineCPU()
	start := time.Now()
	err := parallel(o.targets, o.targets, func(i int) error {
		if think > 0 {
			// Spread the targets' first saves over one think time.
			time.Sleep(rand.N(think))
		}
		for r := 0; r < o.rounds; r++ {
			for a := range t.authors {
				s, err := t.save(ctx, i, a, fmt.Sprintf("%s-%d-%d", name, r, a), fmt.Sprintf("%s-%d", name, r))
				if err != nil {
					return err
				}
				mu.Lock()
				samples = append(samples, sample{i, s})
				mu.Unlock()
				time.Sleep(think)
			}
		}
		return nil
	})
	elapsed := time.Since(start)
	meter.Stop()
	busy1, _ := machineCPU()
	if err != nil {
		return nil, err
	}
	hwm, _ := peak()
	// The think time after each target's last save is not work.
	work := elapsed - think
	res := &results.TargetRun{Name: name, ThinkSeconds: think.Seconds(), RunSeconds: work.Seconds(),
		SavesPerSecond: float64(len(samples)) / work.Seconds(), Outcomes: map[string]int{}, PeakRSSMiB: hwm,
		BusyPercent: 100 * (busy1 - busy0).Seconds() / (elapsed.Seconds() * float64(runtime.NumCPU()))}
	var delays, saves, waits, clean []time.Duration
	perTarget := make([][]time.Duration, o.targets)
	perTargetClean := make([][]time.Duration, o.targets)
	for _, s := range samples {
		res.Outcomes[s.reason]++
		if s.reason != v1alpha1.ReasonCommitted {
			continue
		}
		delays, saves = append(delays, s.delay), append(saves, s.save)
		perTarget[s.target] = append(perTarget[s.target], s.delay)
		timedOut := s.barrierWait >= settleTimeout-100*time.Millisecond
		if s.barrier {
			res.Barrier++
			waits = append(waits, s.barrierWait)
		}
		if timedOut {
			res.SettleTimeouts++
			continue
		}
		clean = append(clean, s.delay)
		perTargetClean[s.target] = append(perTargetClean[s.target], s.delay)
	}
	res.Delay, res.SaveLatency, res.BarrierWait, res.DelayNoTimeout = stats.Of(delays), stats.Of(saves), stats.Of(waits), stats.Of(clean)
	res.CPUPerSave = meter.Per(len(delays))
	res.PerTargetP50, res.PerTargetP99, res.Stalled = perTargetStats(perTarget)
	_, _, res.StalledNoTimeout = perTargetStats(perTargetClean)
	log.Printf("targets %s: %d saves in %.1f s (CPUs %.0f%% busy), delay p50 %.0f ms p99 %.0f ms, per-target p99 max %.0f ms; "+
		"%d held by the barrier, %d for the whole settle timeout",
		name, len(samples), work.Seconds(), res.BusyPercent, res.Delay.P50, res.Delay.P99, res.PerTargetP99.Max,
		res.Barrier, res.SettleTimeouts)
	return res, nil
}

// settleTimeout is gitsave-apiserver's --save-settle-timeout default: how
// long the ordering barrier waits for an edit it never sees.
const settleTimeout = 2 * time.Second

// perTargetStats summarises each target's p50 and p99, and counts the
// stalled targets: a p99 above 3× the median target's p99 (tails compared
// with tails, so ordinary queueing on a busy machine is not a stall).
func perTargetStats(perTarget [][]time.Duration) (p50, p99 stats.Summary, stalled int) {
	var p50s, p99s []float64
	for _, d := range perTarget {
		if len(d) == 0 {
			continue
		}
		s := stats.Of(d)
		p50s, p99s = append(p50s, s.P50), append(p99s, s.P99)
	}
	median := stats.Median(p99s)
	for _, p := range p99s {
		if p > 3*median {
			stalled++
		}
	}
	return stats.OfFloats(p50s), stats.OfFloats(p99s), stalled
}

type targetSample struct {
	delay, save time.Duration
	reason      string
	barrier     bool
	barrierWait time.Duration
}

// save is one author's edit of their ConfigMap in target i, then a Save at
// once, as a person pressing Save right after an edit: the ordering barrier
// makes the request wait for the edit.
func (t *targetsRun) save(ctx context.Context, i, a int, name, value string) (targetSample, error) {
	var s targetSample
	ns, au := t.nss[i], t.authors[a]
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-author-%d", a)},
		Data:       map[string]string{"value": value},
	}
	edit := time.Now()
	var err error
	if !t.created[i] {
		_, err = au.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if a == len(t.authors)-1 {
			t.created[i] = true // only this target's goroutine touches its flag
		}
	} else {
		_, err = au.kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return s, fmt.Errorf("%s: edit: %w", ns, err)
	}
	out := t.tracker.expect(ns, name)
	saved := time.Now()
	_, err = au.gs.GitsaveV1alpha1().CommitRequests(ns).Create(ctx, &v1alpha1.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gitsave.dev/bench-run": t.o.runID}},
		Spec: v1alpha1.CommitRequestSpec{
			TargetRef:         v1alpha1.TargetReference{Name: "t"},
			Message:           fmt.Sprintf("author-%d: %s", a, value),
			CloseDelaySeconds: ptr.To[int32](0),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return s, fmt.Errorf("%s: save: %w", ns, err)
	}
	if !out.wait(2 * time.Minute) {
		return s, fmt.Errorf("%s/%s: no outcome within 2 minutes", ns, name)
	}
	s.reason, s.barrier, s.barrierWait = out.reason, out.barrier, out.barrierWait()
	if !out.pushedAt.IsZero() {
		s.delay, s.save = out.pushedAt.Sub(edit), out.pushedAt.Sub(saved)
	}
	return s, nil
}

// parallel runs f(0..n-1) on up to width goroutines and returns the first
// error.
func parallel(width, n int, f func(i int) error) error {
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil && !apierrors.IsAlreadyExists(err) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return fmt.Errorf("%d failed, first: %w", len(errs), errs[0])
	}
	return nil
}
