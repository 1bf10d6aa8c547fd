package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gitsave/gitsave/bench/internal/fill"
	"github.com/gitsave/gitsave/bench/internal/results"
	"github.com/gitsave/gitsave/bench/internal/stats"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
)

// bigRepo creates bare repository name with files filler files beside the
// targets' folders (a resync would delete unknown files inside a target's
// folder) and the given branches, all at that one commit.
func (c *cluster) bigRepo(name string, files int, branches ...string) error {
	start := time.Now()
	if err := fill.Import(c.repoDir(name), "main", "clusters/fill", files, branches...); err != nil {
		return err
	}
	log.Printf("repository %s: %d files in %s", name, files, time.Since(start).Round(time.Millisecond))
	return nil
}

// saveRun measures Save latency (CommitRequest create → Pushed=True) against
// the git CLI doing the same one-file change into a clone of the same
// remote, interleaved so both see the same machine.
type saveRun struct {
	c       *cluster
	o       *options
	ns      string
	repo    string
	tracker *tracker
	values  chan string // data.value of ConfigMap "edited", as the watch delivers it
	cliDir  string
	cliPath string
	// profiling: do not poll /metrics (it would show in the profile); the
	// ordering barrier still puts each edit in its Save.
	profiling bool
}

const editedCM = "edited"

func runSave(ctx context.Context, c *cluster, o *options, repo string) (*results.Save, *results.Profile, error) {
	s := &saveRun{c: c, o: o, ns: "bench-save-" + o.runID, repo: repo, tracker: newTracker(), values: make(chan string, 1024)}
	if err := s.setup(ctx); err != nil {
		return nil, nil, fmt.Errorf("save setup: %w", err)
	}
	res := &results.Save{Files: o.files, Saves: o.saves, Warmup: o.warmup, Outcomes: map[string]int{}}
	var gs, create, window, cliTotal, cliAdd, cliCommit, cliPush []time.Duration
	gsCPU, cliCPU := c.meter(), c.meter()
	peak := c.peak()
	for i := -o.warmup; i < o.saves; i++ {
		measured := i >= 0
		gitsaveSide := func() error {
			r, err := s.save(ctx, i, gsCPU, measured)
			if err != nil {
				return err
			}
			if !measured {
				return nil
			}
			res.Outcomes[r.reason]++
			if r.barrier {
				res.Barrier++
			}
			if r.reason == v1alpha1.ReasonCommitted {
				gs = append(gs, r.latency)
				create = append(create, r.create)
				window = append(window, r.window)
			}
			return nil
		}
		cliSide := func() error {
			if measured {
				cliCPU.Start()
			}
			add, commit, push, err := s.cli(ctx, i)
			if err != nil {
				return err
			}
			if measured {
				cliCPU.Stop()
				cliAdd, cliCommit, cliPush = append(cliAdd, add), append(cliCommit, commit), append(cliPush, push)
				cliTotal = append(cliTotal, add+commit+push)
			}
			return nil
		}
		// Alternate which goes first, so neither always runs just after the
		// other's background work.
		sides := []func() error{gitsaveSide, cliSide}
		if i%2 != 0 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, f := range sides {
			if err := f(); err != nil {
				return nil, nil, fmt.Errorf("save %d: %w", i, err)
			}
		}
		if measured && (i+1)%50 == 0 {
			log.Printf("save: %d/%d", i+1, o.saves)
		}
	}
	res.PeakRSSMiB, _ = peak()
	res.Gitsave, res.CreateCall, res.WindowWait = stats.Of(gs), stats.Of(create), stats.Of(window)
	res.CLI, res.CLIAdd, res.CLICommit, res.CLIPush = stats.Of(cliTotal), stats.Of(cliAdd), stats.Of(cliCommit), stats.Of(cliPush)
	res.RatioP50 = stats.Ratio(res.Gitsave.P50, res.CLI.P50)
	res.RatioP99 = stats.Ratio(res.Gitsave.P99, res.CLI.P99)
	res.CPUGitsave, res.CPUCLI = gsCPU.Per(len(gs)), cliCPU.Per(len(cliTotal))
	for _, d := range gs {
		res.RawGitsave = append(res.RawGitsave, ms(d))
	}
	for _, d := range cliTotal {
		res.RawCLI = append(res.RawCLI, ms(d))
	}

	var prof *results.Profile
	if o.pprofSeconds > 0 {
		var err error
		if prof, err = s.profile(ctx); err != nil {
			log.Printf("profile: %v", err)
		}
	}
	return res, prof, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (s *saveRun) setup(ctx context.Context) error {
	c := s.c
	if err := c.namespace(ctx, s.ns); err != nil {
		return err
	}
	// The ConfigMap exists before the target, so the target's first resync
	// commits it and every save after that changes one file.
	if _, err := c.jane.CoreV1().ConfigMaps(s.ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: editedCM},
		Data:       map[string]string{"value": "start"},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// A long commit window: nothing is committed until the Save.
	if err := c.mirror(ctx, target{ns: s.ns, name: "save", url: c.repoURL(s.repo), branch: "main",
		path: "clusters/bench", window: 10 * time.Minute, maxEvents: 1000}); err != nil {
		return err
	}
	if err := c.waitReady(ctx, s.ns, "save", 2*time.Minute); err != nil {
		return fmt.Errorf("target not ready: %w", err)
	}

	ready := make(chan struct{})
	go func() {
		if err := s.tracker.run(ctx, c.janeGS, s.ns, "", ready); err != nil {
			log.Printf("save: watch: %v", err)
		}
	}()
	go s.watchValues(ctx)
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("commitrequest watch did not start")
	}

	// The CLI works in a clone over the same HTTP server, on its own branch
	// at the same 10,000-file commit, changing the same path.
	s.cliDir = filepath.Join(s.o.work, "cli-clone")
	_ = os.RemoveAll(s.cliDir)
	if _, err := git(ctx, "", "clone", "--quiet", "--branch", "cli", c.cloneURL(s.repo), s.cliDir); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"user.name", "jane"}, {"user.email", "jane@users.noreply.gitsave.dev"}} {
		if _, err := git(ctx, s.cliDir, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	s.cliPath = "clusters/bench/" + s.ns + "/configmaps/" + editedCM + ".yaml"
	return os.MkdirAll(filepath.Dir(filepath.Join(s.cliDir, s.cliPath)), 0o755)
}

// watchValues forwards the ConfigMap's value each time the watch delivers it.
func (s *saveRun) watchValues(ctx context.Context) {
	cms := s.c.admin.CoreV1().ConfigMaps(s.ns)
	for ctx.Err() == nil {
		w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + editedCM})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				select {
				case s.values <- cm.Data["value"]:
				default: // nobody is waiting for old values
				}
			}
		}
		w.Stop()
	}
}

type saveResult struct {
	latency, create, window time.Duration
	reason                  string
	barrier                 bool
}

// save is one Save by jane: edit, wait until gitsave holds the edit in her
// open window, then time CommitRequest create → Pushed=True.
func (s *saveRun) save(ctx context.Context, i int, meter *cpuMeter, measured bool) (saveResult, error) {
	var r saveResult
	value := "save-" + strconv.Itoa(i)
	patch := fmt.Sprintf(`{"data":{"value":%q}}`, value)
	if _, err := s.c.jane.CoreV1().ConfigMaps(s.ns).Patch(ctx, editedCM, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return r, err
	}
	edited := time.Now()
	if err := s.windowOpen(ctx, value); err != nil {
		return r, err
	}
	r.window = time.Since(edited)

	name := fmt.Sprintf("save-%04d", i+s.o.warmup)
	o := s.tracker.expect(s.ns, name)
	cr := &v1alpha1.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.CommitRequestSpec{
			TargetRef:         v1alpha1.TargetReference{Name: "save"},
			Message:           "Set value to " + value,
			CloseDelaySeconds: ptr.To[int32](0),
		},
	}
	if measured {
		meter.Start()
	}
	start := time.Now()
	if _, err := s.c.janeGS.GitsaveV1alpha1().CommitRequests(s.ns).Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	r.create = time.Since(start)
	if !o.wait(time.Minute) {
		return r, fmt.Errorf("%s: no outcome within a minute", name)
	}
	if measured {
		meter.Stop()
	}
	r.reason, r.barrier = o.reason, o.barrier
	if !o.pushedAt.IsZero() {
		r.latency = o.pushedAt.Sub(start)
	}
	if o.reason != v1alpha1.ReasonCommitted || o.files != 1 {
		log.Printf("save %s: %s, %d files", name, o.reason, o.files)
	}
	return r, nil
}

// windowOpen returns once gitsave has the edit in a worker's window: first
// our own watch delivers the new value (gitsave's informer gets the same
// event at the same moment), then gitsave's attribution index holds no
// unconsumed admission fact (the event was matched and handed to the worker,
// whose FIFO orders it before any later CommitRequest). Polling the
// GitTarget's openWindowAuthor would cost up to its 5 s status interval.
func (s *saveRun) windowOpen(ctx context.Context, value string) error {
	deadline := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case v := <-s.values:
			seen = v == value
		case <-deadline:
			return fmt.Errorf("the watch never delivered value %s", value)
		}
	}
	if s.profiling {
		return nil
	}
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(5 * time.Millisecond) {
		n, err := s.c.factsHeld(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
	return fmt.Errorf("gitsave still holds unconsumed admission facts after 10 s")
}

// cli is the same change by hand: git add, git commit, git push, each timed.
func (s *saveRun) cli(ctx context.Context, i int) (add, commit, push time.Duration, err error) {
	content := fmt.Sprintf("apiVersion: v1\ndata:\n  value: save-%d\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", i, editedCM, s.ns)
	if err = os.WriteFile(filepath.Join(s.cliDir, s.cliPath), []byte(content), 0o644); err != nil {
		return
	}
	step := func(args ...string) (time.Duration, error) {
		start := time.Now()
		_, err := git(ctx, s.cliDir, args...)
		return time.Since(start), err
	}
	if add, err = step("add", "--", s.cliPath); err != nil {
		return
	}
	if commit, err = step("commit", "--quiet", "-m", "Set value to save-"+strconv.Itoa(i)); err != nil {
		return
	}
	push, err = step("push", "--quiet", "origin", "HEAD:cli")
	return
}
