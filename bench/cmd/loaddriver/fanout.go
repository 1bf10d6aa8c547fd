package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gitsave/gitsave/bench/internal/proc"
	"github.com/gitsave/gitsave/bench/internal/results"
	"github.com/gitsave/gitsave/bench/internal/stats"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
)

// markLabel carries the change number: every watcher records when it first
// sees an event with a given mark.
const markLabel = "gitsave.dev/fanout-mark"

// fanMode is one way of watching:
//   - aggregator: CommitRequests through kube-apiserver, as kubectl does;
//   - direct: CommitRequests on gitsave-apiserver's own port (no proxy hop);
//   - kube: ConfigMaps on kube-apiserver (its watch cache), the baseline.
type fanMode struct {
	name   string
	host   string
	tls    *tls.Config
	path   string // watch path without query
	mutate mutator
	server proc.Proc // whose memory to report
}

// mutator changes the watched objects: a label patch on the anchor, and
// creating a new object, each carrying mark.
type mutator interface {
	anchor(ctx context.Context) (rv string, err error)
	patch(ctx context.Context, mark string) error
	create(ctx context.Context, mark string) error
}

func runFanout(ctx context.Context, c *cluster, o *options) ([]results.Fanout, error) {
	ns := "bench-fanout-" + o.runID
	if err := c.namespace(ctx, ns); err != nil {
		return nil, err
	}
	repo := "fanout-" + o.runID
	if _, err := git(ctx, "", "init", "--quiet", "--bare", "--initial-branch=main", c.repoDir(repo)); err != nil {
		return nil, err
	}
	// CommitRequests need a GitTarget to name; with no edits they resolve
	// NoWindowInGrace at once.
	if err := c.mirror(ctx, target{ns: ns, name: "fanout", url: c.repoURL(repo), branch: "main",
		path: "clusters/fanout", window: 10 * time.Minute, maxEvents: 1000}); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, ns, "fanout", 2*time.Minute); err != nil {
		return nil, err
	}

	// The baseline's ConfigMaps live where no WatchRule looks, so their
	// writes cost no admission webhook call and no mirroring.
	kubeNS := "bench-fanout-kube-" + o.runID
	if err := c.namespace(ctx, kubeNS); err != nil {
		return nil, err
	}

	kubeTLS, err := rest.TLSConfigFor(c.adminCfg)
	if err != nil {
		return nil, err
	}
	gsTLS, err := c.tlsToGitsave()
	if err != nil {
		return nil, err
	}
	pki := filepath.Join(c.localDir, "pki")
	directCfg := &rest.Config{Host: c.gitsaveURL, QPS: 5000, Burst: 10000, TLSClientConfig: rest.TLSClientConfig{
		CAFile: filepath.Join(pki, "gitsave-ca.crt"), CertFile: filepath.Join(pki, "admin.crt"), KeyFile: filepath.Join(pki, "admin.key")}}
	crPath := "/apis/gitsave.dev/v1alpha1/namespaces/" + ns + "/commitrequests"
	modes := map[string]fanMode{
		"aggregator": {name: "aggregator", host: c.adminCfg.Host, tls: kubeTLS, path: crPath,
			mutate: &crMutator{cs: c.adminGS, ns: ns, prefix: "agg"}, server: c.procs["gitsave-apiserver"]},
		"direct": {name: "direct", host: c.gitsaveURL, tls: gsTLS, path: crPath,
			mutate: &crMutator{cs: versioned.NewForConfigOrDie(directCfg), ns: ns, prefix: "dir"}, server: c.procs["gitsave-apiserver"]},
		"kube": {name: "kube", host: c.adminCfg.Host, tls: kubeTLS, path: "/api/v1/namespaces/" + kubeNS + "/configmaps",
			mutate: &cmMutator{cs: c.admin, ns: kubeNS}, server: c.procs["kube-apiserver"]},
	}
	var out []results.Fanout
	for _, name := range o.fanoutModes {
		m, ok := modes[name]
		if !ok {
			return nil, fmt.Errorf("unknown fan-out mode %q", name)
		}
		r, err := fanout(ctx, c, o, m)
		if err != nil {
			return nil, fmt.Errorf("fan-out %s: %w", name, err)
		}
		out = append(out, *r)
	}
	return out, nil
}

// mark is one change: when each watcher first saw it.
type mark struct {
	seen  []atomic.Int64 // unix nanos per watcher, 0 until seen
	count atomic.Int32
	all   chan struct{} // closed when every watcher saw it
}

func fanout(ctx context.Context, c *cluster, o *options, m fanMode) (*results.Fanout, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rv, err := m.mutate.anchor(ctx)
	if err != nil {
		return nil, err
	}
	w := o.watchers
	marks := map[string]*mark{}
	for r := 0; r < o.fanoutReps; r++ {
		for _, kind := range []string{"p", "c"} {
			marks[fmt.Sprintf("%s-%s%d", m.name, kind, r)] = &mark{seen: make([]atomic.Int64, w), all: make(chan struct{})}
		}
	}

	// Every watcher is its own client on its own connection (HTTP/1.1), as
	// 1,000 separate kubectl or UI sessions would be.
	url := fmt.Sprintf("%s%s?watch=1&resourceVersion=%s", m.host, m.path, rv)
	connected := make(chan error, w)
	var wg sync.WaitGroup
	var transports []*http.Transport
	connectStart := time.Now()
	sem := make(chan struct{}, 50) // TLS handshakes at a time
	for i := 0; i < w; i++ {
		tr := &http.Transport{TLSClientConfig: m.tls.Clone(), TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
		transports = append(transports, tr)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			<-sem
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("watch: %s", resp.Status)
			}
			connected <- err
			if err != nil {
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			key := []byte(`"` + markLabel + `":"`)
			for sc.Scan() {
				at := time.Now().UnixNano()
				line := sc.Bytes()
				j := bytes.Index(line, key)
				if j < 0 {
					continue
				}
				v := line[j+len(key):]
				v = v[:max(bytes.IndexByte(v, '"'), 0)]
				mk := marks[string(v)]
				if mk == nil || mk.seen[i].Load() != 0 {
					continue
				}
				mk.seen[i].Store(at)
				if mk.count.Add(1) == int32(w) {
					close(mk.all)
				}
			}
		}(i)
	}
	for i := 0; i < w; i++ {
		if err := <-connected; err != nil {
			return nil, fmt.Errorf("watcher %d: %w", i, err)
		}
	}
	connect := time.Since(connectStart)
	log.Printf("fan-out %s: %d watchers connected in %s", m.name, w, connect.Round(time.Millisecond))
	time.Sleep(2 * time.Second) // let registration and TLS work settle

	peak := c.peakOf(m.server)
	meter := c.meter()
	meter.Start()
	var patchDelays, createDelays, patchCalls []time.Duration
	var patchAll, createAll, patchAllStart, createAllStart []time.Duration
	missed := 0
	// collect records each delivery against the call's response, and the
	// last delivery against the call's start (an upper bound: the change
	// happened somewhere inside the call).
	collect := func(mk *mark, start, resp time.Time, each, all, allStart *[]time.Duration) {
		select {
		case <-mk.all:
		case <-time.After(10 * time.Second):
		}
		var last time.Time
		for i := range mk.seen {
			at := mk.seen[i].Load()
			if at == 0 {
				missed++
				continue
			}
			t := time.Unix(0, at)
			*each = append(*each, t.Sub(resp))
			if t.After(last) {
				last = t
			}
		}
		*all = append(*all, last.Sub(resp))
		*allStart = append(*allStart, last.Sub(start))
	}
	for r := 0; r < o.fanoutReps; r++ {
		pm := fmt.Sprintf("%s-p%d", m.name, r)
		start := time.Now()
		if err := m.mutate.patch(ctx, pm); err != nil {
			return nil, err
		}
		resp := time.Now()
		patchCalls = append(patchCalls, resp.Sub(start))
		collect(marks[pm], start, resp, &patchDelays, &patchAll, &patchAllStart)
		time.Sleep(100 * time.Millisecond)

		cm := fmt.Sprintf("%s-c%d", m.name, r)
		start = time.Now()
		if err := m.mutate.create(ctx, cm); err != nil {
			return nil, err
		}
		collect(marks[cm], start, time.Now(), &createDelays, &createAll, &createAllStart)
		time.Sleep(100 * time.Millisecond)
	}
	meter.Stop()
	hwm, _ := peak()
	cancel()
	wg.Wait()
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
	res := &results.Fanout{Mode: m.name, Watchers: w, Reps: o.fanoutReps, ConnectSeconds: connect.Seconds(),
		Patch: stats.Of(patchDelays), PatchAll: stats.Of(patchAll),
		Create: stats.Of(createDelays), CreateAll: stats.Of(createAll),
		PatchAllFromStart: stats.Of(patchAllStart), CreateAllFromStart: stats.Of(createAllStart),
		PatchCall: stats.Of(patchCalls), Missed: missed, PeakRSSMiB: hwm,
		CPUPerEvent: meter.Per(2 * o.fanoutReps)}
	log.Printf("fan-out %s: patch p50 %.1f ms p99 %.1f ms (all watchers p99 %.1f ms), create p99 %.1f ms, missed %d",
		m.name, res.Patch.P50, res.Patch.P99, res.PatchAll.P99, res.Create.P99, missed)
	return res, nil
}

// peakOf resets a process's VmHWM and returns a func reading it.
func (c *cluster) peakOf(p proc.Proc) func() (float64, float64) {
	_, start, _ := p.Memory()
	_ = p.ResetPeak()
	return func() (float64, float64) {
		hwm, _, _ := p.Memory()
		return hwm, start
	}
}

// crMutator changes CommitRequests (as the admin).
type crMutator struct {
	cs     versioned.Interface
	ns     string
	prefix string
}

func (m *crMutator) anchor(ctx context.Context) (string, error) {
	crs := m.cs.GitsaveV1alpha1().CommitRequests(m.ns)
	if _, err := crs.Create(ctx, m.request(m.prefix+"-anchor", "none"), metav1.CreateOptions{}); err != nil {
		return "", err
	}
	time.Sleep(time.Second) // let its own status transitions pass
	list, err := crs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	return list.ResourceVersion, nil
}

func (m *crMutator) request(name, mk string) *v1alpha1.CommitRequest {
	return &v1alpha1.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{markLabel: mk}},
		Spec: v1alpha1.CommitRequestSpec{TargetRef: v1alpha1.TargetReference{Name: "fanout"},
			Message: "fan-out " + mk, CloseDelaySeconds: ptr.To[int32](0)},
	}
}

func (m *crMutator) patch(ctx context.Context, mk string) error {
	p := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, markLabel, mk)
	_, err := m.cs.GitsaveV1alpha1().CommitRequests(m.ns).Patch(ctx, m.prefix+"-anchor", types.MergePatchType, []byte(p), metav1.PatchOptions{})
	return err
}

func (m *crMutator) create(ctx context.Context, mk string) error {
	_, err := m.cs.GitsaveV1alpha1().CommitRequests(m.ns).Create(ctx, m.request(mk, mk), metav1.CreateOptions{})
	return err
}

// cmMutator changes ConfigMaps on kube-apiserver (the baseline).
type cmMutator struct {
	cs kubernetes.Interface
	ns string
}

func (m *cmMutator) anchor(ctx context.Context) (string, error) {
	cms := m.cs.CoreV1().ConfigMaps(m.ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-anchor",
		Labels: map[string]string{markLabel: "none"}}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	return list.ResourceVersion, nil
}

func (m *cmMutator) patch(ctx context.Context, mk string) error {
	p := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, markLabel, mk)
	_, err := m.cs.CoreV1().ConfigMaps(m.ns).Patch(ctx, "kube-anchor", types.MergePatchType, []byte(p), metav1.PatchOptions{})
	return err
}

func (m *cmMutator) create(ctx context.Context, mk string) error {
	_, err := m.cs.CoreV1().ConfigMaps(m.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: mk,
		Labels: map[string]string{markLabel: mk}}}, metav1.CreateOptions{})
	return err
}
