// Package results is what bench/cmd/loaddriver measures and
// bench/cmd/benchreport publishes, as JSON between the two.
package results

import (
	"encoding/json"
	"os"
	"time"

	"github.com/gitsave/gitsave/bench/internal/stats"
)

// Run is one load-driver run on the bench control plane.
type Run struct {
	RunID    string    `json:"runID"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Flags    string    `json:"flags"`
	Machine  Machine   `json:"machine"`
	Save     *Save     `json:"save,omitempty"`
	Mirror   *Mirror   `json:"mirror,omitempty"`
	Targets  *Targets  `json:"targets,omitempty"`
	Fanout   []Fanout  `json:"fanout,omitempty"`
	Profile  *Profile  `json:"profile,omitempty"`
}

// Machine says where the numbers come from.
type Machine struct {
	NProc        int     `json:"nproc"`
	CPUModel     string  `json:"cpuModel"`
	MemTotalMiB  float64 `json:"memTotalMiB"`
	Kernel       string  `json:"kernel"`
	GoVersion    string  `json:"goVersion"`
	GitVersion   string  `json:"gitVersion"`
	LoadStart    string  `json:"loadavgStart"`
	LoadEnd      string  `json:"loadavgEnd"`
	Commit       string  `json:"commit"`
	Dirty        bool    `json:"dirty"`
	ServerBinary string  `json:"serverBinary"` // sha256 prefix and mtime of gitsave-apiserver
	ServerBuilt  string  `json:"serverBuilt"`
	OtherLoad    float64 `json:"otherCPUPercent"` // CPU used by processes outside the bench instance during the run
	Steal        float64 `json:"stealPercent"`    // CPU the hypervisor gave to other guests during the run
}

// CPU is CPU time spent per operation, by process, in milliseconds.
type CPU struct {
	Gitsave   float64 `json:"gitsaveMs"`
	Kube      float64 `json:"kubeApiserverMs"`
	Etcd      float64 `json:"etcdMs"`
	GitServer float64 `json:"gitServerMs"` // git-http-server and its git http-backend children
	Driver    float64 `json:"driverMs"`    // the load driver and the git CLI it runs
}

// Save is Save latency against the git CLI floor.
type Save struct {
	Files      int            `json:"files"`
	Saves      int            `json:"saves"`
	Warmup     int            `json:"warmup"`
	Gitsave    stats.Summary  `json:"gitsave"`    // CommitRequest create call start → Pushed=True seen on the watch
	CreateCall stats.Summary  `json:"createCall"` // create call start → create response
	WindowWait stats.Summary  `json:"windowWait"` // edit response → edit consumed by gitsave (not in Gitsave)
	CLI        stats.Summary  `json:"cli"`        // git add + git commit + git push
	CLIAdd     stats.Summary  `json:"cliAdd"`
	CLICommit  stats.Summary  `json:"cliCommit"`
	CLIPush    stats.Summary  `json:"cliPush"`
	RatioP50   float64        `json:"ratioP50"`
	RatioP99   float64        `json:"ratioP99"`
	Outcomes   map[string]int `json:"outcomes"`
	Barrier    int            `json:"waitedForEdits"` // saves that went through WaitingForEdits anyway
	CPUGitsave CPU            `json:"cpuPerSave"`
	CPUCLI     CPU            `json:"cpuPerCLI"`
	PeakRSSMiB float64        `json:"peakRSSMiB"`
	RawGitsave []float64      `json:"rawGitsaveMs"`
	RawCLI     []float64      `json:"rawCLIMs"`
}

// Mirror is watch events into pushed commits on one branch.
type Mirror struct {
	Files        int     `json:"files"`
	Objects      int     `json:"objects"`
	Edits        int     `json:"edits"`
	Writers      int     `json:"writers"`
	CommitWindow string  `json:"commitWindow"`
	MaxEvents    int     `json:"maxWindowEvents"`
	WriteSeconds float64 `json:"writeSeconds"` // first edit sent → last edit acknowledged
	TotalSeconds float64 `json:"totalSeconds"` // first edit sent → every final value on the remote
	WriteRate    float64 `json:"writeRate"`    // edits/s the API server accepted (the ceiling here)
	MirrorRate   float64 `json:"mirrorRate"`   // edits/s into pushed commits
	LagSeconds   float64 `json:"lagSeconds"`   // last edit acknowledged → on the remote
	Commits      int     `json:"commits"`
	PeakRSSMiB   float64 `json:"peakRSSMiB"`
	StartRSSMiB  float64 `json:"startRSSMiB"`
	CPUPerEdit   CPU     `json:"cpuPerEdit"`
	BusyPercent  float64 `json:"busyPercent"` // all CPUs of the machine, during the phase
}

// Targets is many GitTargets with several authors each, saving at once.
type Targets struct {
	Targets      int         `json:"targets"`
	Authors      int         `json:"authors"`
	Rounds       int         `json:"rounds"`
	SetupSeconds float64     `json:"setupSeconds"`
	Runs         []TargetRun `json:"runs"`
}

// TargetRun is one load level: authors pausing Think between saves (paced),
// or saving back to back (Think 0: as much load as the machine takes).
type TargetRun struct {
	Name           string         `json:"name"`
	ThinkSeconds   float64        `json:"thinkSeconds"`
	RunSeconds     float64        `json:"runSeconds"`
	SavesPerSecond float64        `json:"savesPerSecond"`
	Delay          stats.Summary  `json:"delay"`       // edit start → Pushed, all saves
	SaveLatency    stats.Summary  `json:"saveLatency"` // create start → Pushed, all saves
	PerTargetP99   stats.Summary  `json:"perTargetP99"`
	PerTargetP50   stats.Summary  `json:"perTargetP50"`
	Stalled        int            `json:"stalledTargets"` // targets whose p99 delay > 3× the median per-target p99
	Outcomes       map[string]int `json:"outcomes"`
	PeakRSSMiB     float64        `json:"peakRSSMiB"`
	CPUPerSave     CPU            `json:"cpuPerSave"`
	BusyPercent    float64        `json:"busyPercent"` // all CPUs of the machine, during the run
	// Saves the ordering barrier held (WaitingForEdits), how long, and how
	// many of those waited the full settle timeout (~2 s) for an edit.
	Barrier        int           `json:"waitedForEdits"`
	BarrierWait    stats.Summary `json:"barrierWait"`
	SettleTimeouts int           `json:"settleTimeouts"`
	// The same delays without the saves that hit the settle timeout.
	DelayNoTimeout   stats.Summary `json:"delayWithoutSettleTimeouts"`
	StalledNoTimeout int           `json:"stalledWithoutSettleTimeouts"`
}

// Fanout is one watch fan-out measurement.
type Fanout struct {
	Mode           string        `json:"mode"` // aggregator, direct, kube
	Watchers       int           `json:"watchers"`
	Reps           int           `json:"reps"`
	ConnectSeconds float64       `json:"connectSeconds"`
	Patch          stats.Summary `json:"patch"`     // label patch response → MODIFIED delivered, every (watcher, rep)
	PatchAll       stats.Summary `json:"patchAll"`  // per rep: the last watcher's delivery
	Create         stats.Summary `json:"create"`    // create response → ADDED delivered
	CreateAll      stats.Summary `json:"createAll"` // per rep: the last watcher's delivery
	PatchCall      stats.Summary `json:"patchCall"` // the patch call itself
	// From the call's start to the last watcher's delivery: an upper bound,
	// since the change happened somewhere inside the call.
	PatchAllFromStart  stats.Summary `json:"patchAllFromStart"`
	CreateAllFromStart stats.Summary `json:"createAllFromStart"`
	Missed             int           `json:"missed"`      // deliveries that never came (10 s timeout)
	PeakRSSMiB         float64       `json:"peakRSSMiB"`  // of the server holding the watches
	CPUPerEvent        CPU           `json:"cpuPerEvent"` // per change, all watchers together
}

// Profile is a CPU profile of gitsave-apiserver taken during a save loop.
type Profile struct {
	File    string `json:"file"`
	Seconds int    `json:"seconds"`
	Saves   int    `json:"saves"`
	Top     string `json:"top"`
}

// Write saves r as indented JSON.
func Write(path string, r *Run) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Read loads a Run written by Write.
func Read(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Run
	return &r, json.Unmarshal(b, &r)
}
