// loaddriver measures gitsave on a running local control plane (the bench
// instance that bench/run.sh starts with hack/local/up.sh on its own ports)
// and writes the figures as JSON for bench/cmd/benchreport:
//
//	save     Save latency (CommitRequest create → Pushed=True) against the
//	         git CLI doing the same change, in a 10,000-file repository
//	mirror   watch events into pushed commits on one branch, peak RSS
//	targets  many GitTargets × authors saving at once, per-target p99
//	fanout   1,000 watchers on commitrequests, delivery delay
//
// It never decides pass or fail: it measures, with a baseline taken in the
// same run, and reports.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gitsave/gitsave/bench/internal/results"
)

type options struct {
	env, gitsaveURL, outDir, work, runID string
	phases                               []string
	serverBinary                         string

	files, saves, warmup, pprofSeconds int

	mirrorObjects, mirrorEdits, mirrorWriters, mirrorMaxEvents int
	mirrorWindow                                               time.Duration

	targets, authors, rounds int
	targetsThink             time.Duration

	watchers, fanoutReps int
	fanoutModes          []string
}

func main() {
	o := &options{}
	var phases, modes string
	flag.StringVar(&o.env, "env", "_output/bench-local/env.sh", "env.sh written by hack/local/up.sh for the bench instance")
	flag.StringVar(&o.gitsaveURL, "gitsave-url", "https://127.0.0.1:19443", "gitsave-apiserver's own address (metrics, pprof, direct watches)")
	flag.StringVar(&o.outDir, "out", "_output/bench", "folder for results.json and profiles")
	flag.StringVar(&o.serverBinary, "server-binary", "_output/bin/gitsave-apiserver", "the gitsave-apiserver binary the instance runs (recorded in the report)")
	flag.StringVar(&o.runID, "run-id", strconv.FormatInt(time.Now().Unix()%1e6, 36), "suffix for namespaces and repositories of this run")
	flag.StringVar(&phases, "phases", "save,mirror,targets,fanout", "phases to run, comma-separated")
	flag.IntVar(&o.files, "files", 10000, "files in the repository the Save and mirror phases commit into")
	flag.IntVar(&o.saves, "saves", 200, "measured saves (and CLI commits)")
	flag.IntVar(&o.warmup, "warmup", 10, "saves (and CLI commits) before measuring")
	flag.IntVar(&o.pprofSeconds, "pprof-seconds", 0, "after the save loop, take a CPU profile of gitsave-apiserver over this many seconds of saves (0: none)")
	flag.IntVar(&o.mirrorObjects, "mirror-objects", 200, "ConfigMaps edited in the mirror phase")
	flag.IntVar(&o.mirrorEdits, "mirror-edits", 4000, "edits in the mirror phase (spread over the objects)")
	flag.IntVar(&o.mirrorWriters, "mirror-writers", 8, "concurrent writers in the mirror phase")
	flag.IntVar(&o.mirrorMaxEvents, "mirror-max-events", 150, "GitTarget maxWindowEvents in the mirror phase")
	flag.DurationVar(&o.mirrorWindow, "mirror-window", time.Second, "GitTarget commitWindow in the mirror phase")
	flag.IntVar(&o.targets, "targets", 100, "GitTargets (one branch each) in the targets phase")
	flag.IntVar(&o.authors, "authors", 10, "authors per target in the targets phase")
	flag.IntVar(&o.rounds, "rounds", 1, "saves per author per target in the targets phase")
	flag.DurationVar(&o.targetsThink, "targets-think", 4*time.Second, "pause between saves in a target for the paced run of the targets phase (0: only the back-to-back run)")
	flag.IntVar(&o.watchers, "watchers", 1000, "concurrent watchers in the fan-out phase")
	flag.IntVar(&o.fanoutReps, "fanout-reps", 30, "label patches (and as many creates) per fan-out mode")
	flag.StringVar(&modes, "fanout-modes", "aggregator,direct,kube", "fan-out modes: aggregator, direct (gitsave's port), kube (ConfigMaps, the baseline)")
	flag.Parse()
	o.phases, o.fanoutModes = split(phases), split(modes)
	o.work = o.outDir + "/work"
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func run(ctx context.Context, o *options) error {
	c, err := newCluster(o.env, o.gitsaveURL)
	if err != nil {
		return err
	}
	if err := c.ensureEditorRole(ctx); err != nil {
		return err
	}
	r := &results.Run{RunID: o.runID, Started: time.Now(), Flags: strings.Join(os.Args[1:], " ")}
	r.Machine = machine(o)
	busy0, steal0 := machineCPU()
	ours0 := sum(c.cpuNow())

	// The Save and mirror phases share one repository of o.files files.
	repo := "save-" + o.runID
	if has(o.phases, "save") || has(o.phases, "mirror") {
		if err := c.bigRepo(repo, o.files, "cli", "mirror"); err != nil {
			return err
		}
	}
	for _, phase := range o.phases {
		log.Printf("phase %s", phase)
		switch phase {
		case "save":
			r.Save, r.Profile, err = runSave(ctx, c, o, repo)
		case "mirror":
			r.Mirror, err = runMirror(ctx, c, o, repo)
		case "targets":
			r.Targets, err = runTargets(ctx, c, o)
		case "fanout":
			r.Fanout, err = runFanout(ctx, c, o)
		default:
			err = fmt.Errorf("unknown phase %q", phase)
		}
		if err != nil {
			return fmt.Errorf("phase %s: %w", phase, err)
		}
		if err := results.Write(o.outDir+"/results.json", r); err != nil { // keep what we have
			return err
		}
	}
	r.Finished = time.Now()
	r.Machine.LoadEnd = loadavg()
	// CPU the machine spent on anything but this instance and the driver:
	// other people's work on the shared machine.
	busy1, steal1 := machineCPU()
	capacity := r.Finished.Sub(r.Started).Seconds() * float64(runtime.NumCPU())
	r.Machine.OtherLoad = 100 * ((busy1 - busy0) - (sum(c.cpuNow()) - ours0)).Seconds() / capacity
	r.Machine.Steal = 100 * (steal1 - steal0).Seconds() / capacity
	return results.Write(o.outDir+"/results.json", r)
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sum(m map[string]time.Duration) time.Duration {
	var t time.Duration
	for _, v := range m {
		t += v
	}
	return t
}

// machineCPU is the CPU time all CPUs spent busy, and the time the
// hypervisor ran other guests instead (steal), from /proc/stat.
func machineCPU() (busy, steal time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)[1:]
	tick := func(i int) time.Duration {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(n) * 10 * time.Millisecond
	}
	// user nice system idle iowait irq softirq steal (guest time is in user)
	return tick(0) + tick(1) + tick(2) + tick(5) + tick(6), tick(7)
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func machine(o *options) results.Machine {
	m := results.Machine{NProc: runtime.NumCPU(), LoadStart: loadavg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				m.MemTotalMiB = kb / 1024
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.GoVersion = output("go", "env", "GOVERSION")
	m.GitVersion = strings.TrimPrefix(output("git", "--version"), "git version ")
	m.Commit = output("git", "rev-parse", "--short=12", "HEAD")
	m.Dirty = output("git", "status", "--porcelain", "--untracked-files=no") != ""
	if f, err := os.Open(o.serverBinary); err == nil {
		h := sha256.New()
		_, _ = io.Copy(h, f)
		st, _ := f.Stat()
		f.Close()
		m.ServerBinary = hex.EncodeToString(h.Sum(nil))[:12]
		m.ServerBuilt = st.ModTime().UTC().Format(time.RFC3339)
	}
	return m
}

func output(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
