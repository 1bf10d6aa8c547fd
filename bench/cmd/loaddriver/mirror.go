package main

import (
	"context"
	"fmt"
	"log"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gitsave/gitsave/bench/internal/results"
)

// runMirror measures how fast watch events become pushed commits on one
// branch: jane edits many ConfigMaps as fast as the API server takes them
// (with a short commit window, no Save), and the phase ends when every
// ConfigMap's last value is on the remote.
func runMirror(ctx context.Context, c *cluster, o *options, repo string) (*results.Mirror, error) {
	ns := "bench-mirror-" + o.runID
	folder := "clusters/mirror"
	if err := c.namespace(ctx, ns); err != nil {
		return nil, err
	}
	cms := c.jane.CoreV1().ConfigMaps(ns)
	for k := 0; k < o.mirrorObjects; k++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", k)},
			Data:       map[string]string{"value": "start"},
		}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	if err := c.mirror(ctx, target{ns: ns, name: "mirror", url: c.repoURL(repo), branch: "mirror",
		path: folder, window: o.mirrorWindow, maxEvents: int32(o.mirrorMaxEvents)}); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, ns, "mirror", 2*time.Minute); err != nil {
		return nil, fmt.Errorf("mirror target not ready: %w", err)
	}
	dir := c.repoDir(repo)
	// The first resync commits the objects created above.
	if err := waitOnRemote(ctx, dir, "mirror", folder, "start", o.mirrorObjects, 2*time.Minute); err != nil {
		return nil, err
	}
	commitsBefore := revCount(ctx, dir, "mirror")

	final := "final-" + o.runID
	perObject := max(o.mirrorEdits/o.mirrorObjects, 1)
	edits := perObject * o.mirrorObjects
	peak := c.peak()
	meter := c.meter()
	meter.Start()
	busy0, _ := machineCPU()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, o.mirrorWriters)
	for w := 0; w < o.mirrorWriters; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// Each object's edits come from one writer, in order, so its last
			// value is known.
			for j := 0; j < perObject; j++ {
				for k := w; k < o.mirrorObjects; k += o.mirrorWriters {
					v := "v-" + strconv.Itoa(j)
					if j == perObject-1 {
						v = final
					}
					patch := fmt.Sprintf(`{"data":{"value":%q}}`, v)
					if _, err := cms.Patch(ctx, fmt.Sprintf("cm-%04d", k), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	written := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if err := waitOnRemote(ctx, dir, "mirror", folder, final, o.mirrorObjects, 5*time.Minute); err != nil {
		return nil, err
	}
	total := time.Since(start)
	meter.Stop()
	busy1, _ := machineCPU()
	hwm, startRSS := peak()
	res := &results.Mirror{
		Files: o.files, Objects: o.mirrorObjects, Edits: edits, Writers: o.mirrorWriters,
		CommitWindow: o.mirrorWindow.String(), MaxEvents: o.mirrorMaxEvents,
		WriteSeconds: written.Seconds(), TotalSeconds: total.Seconds(),
		WriteRate: float64(edits) / written.Seconds(), MirrorRate: float64(edits) / total.Seconds(),
		LagSeconds: (total - written).Seconds(),
		Commits:    revCount(ctx, dir, "mirror") - commitsBefore,
		PeakRSSMiB: hwm, StartRSSMiB: startRSS,
		CPUPerEdit:  meter.Per(edits),
		BusyPercent: 100 * (busy1 - busy0).Seconds() / (total.Seconds() * float64(runtime.NumCPU())),
	}
	log.Printf("mirror: %d edits in %.1f s (API server took them in %.1f s), %d commits", edits, res.TotalSeconds, res.WriteSeconds, res.Commits)
	return res, nil
}

// waitOnRemote polls the bare repository until want files under folder on
// branch contain marker (git grep on the branch tip: one process per poll).
func waitOnRemote(ctx context.Context, dir, branch, folder, marker string, want int, timeout time.Duration) error {
	last := 0
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		out, err := git(ctx, "", "--git-dir", dir, "grep", "-l", "-F", marker, branch, "--", folder)
		if err != nil && out != "" {
			return false, nil // no match yet: git grep exits 1 with no output
		}
		last = 0
		if out != "" {
			last = len(strings.Split(out, "\n"))
		}
		return last >= want, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d files on %s carry %q: %w", last, want, branch, marker, err)
	}
	return nil
}

func revCount(ctx context.Context, dir, branch string) int {
	out, err := git(ctx, "", "--git-dir", dir, "rev-list", "--count", branch)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(out)
	return n
}
