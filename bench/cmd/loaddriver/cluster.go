package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitsave/gitsave/bench/internal/proc"
	"github.com/gitsave/gitsave/bench/internal/results"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
	"github.com/gitsave/gitsave/test/localenv"
)

// cluster is the bench control plane, as hack/local/up.sh left it.
type cluster struct {
	localDir string
	env      map[string]string

	adminCfg *rest.Config
	admin    kubernetes.Interface
	adminGS  versioned.Interface
	jane     kubernetes.Interface
	janeGS   versioned.Interface

	gitsaveURL string       // gitsave-apiserver's own port, for /metrics and pprof
	direct     *http.Client // admin's client certificate, trusting gitsave's CA

	gitRoot, gitBaseURL string // bare repositories on disk, and their URL prefix
	gitUser, gitPass    string

	procs map[string]proc.Proc // etcd, kube-apiserver, git-http-server, gitsave-apiserver
}

// restConfig loads a kubeconfig with client-side rate limits high enough
// that the driver, not client-go's default 5 QPS, never sets the pace.
func restConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.UserAgent = "gitsave-loaddriver"
	return cfg, nil
}

func newCluster(envPath, gitsaveURL string) (*cluster, error) {
	env, err := localenv.Read(envPath)
	if err != nil {
		return nil, fmt.Errorf("%v (start the bench instance with hack/local/up.sh first; see bench/run.sh)", err)
	}
	c := &cluster{env: env, gitsaveURL: gitsaveURL, procs: map[string]proc.Proc{}}
	c.localDir = filepath.Dir(env["KUBECONFIG_ADMIN"])
	if c.adminCfg, err = restConfig(env["KUBECONFIG_ADMIN"]); err != nil {
		return nil, err
	}
	janeCfg, err := restConfig(env["KUBECONFIG_JANE"])
	if err != nil {
		return nil, err
	}
	c.admin = kubernetes.NewForConfigOrDie(c.adminCfg)
	c.adminGS = versioned.NewForConfigOrDie(c.adminCfg)
	c.jane = kubernetes.NewForConfigOrDie(janeCfg)
	c.janeGS = versioned.NewForConfigOrDie(janeCfg)

	c.gitRoot = filepath.Dir(env["GIT_REMOTE_DIR"])
	c.gitBaseURL = env["GIT_REMOTE_URL"][:strings.LastIndex(env["GIT_REMOTE_URL"], "/")]
	c.gitUser, c.gitPass = env["GIT_USERNAME"], env["GIT_PASSWORD"]

	if c.direct, err = c.directClient(); err != nil {
		return nil, err
	}
	for _, name := range []string{"etcd", "kube-apiserver", "git-http-server", "gitsave-apiserver"} {
		p, err := proc.Find(c.localDir, name)
		if err != nil {
			return nil, fmt.Errorf("finding %s: %w", name, err)
		}
		c.procs[name] = p
	}
	return c, nil
}

// tlsToGitsave presents the admin's certificate (system:masters) to
// gitsave-apiserver's own port and trusts its CA.
func (c *cluster) tlsToGitsave() (*tls.Config, error) {
	pki := filepath.Join(c.localDir, "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(pki, "gitsave-ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

func (c *cluster) directClient() (*http.Client, error) {
	tc, err := c.tlsToGitsave()
	if err != nil {
		return nil, err
	}
	// No gzip: /metrics is 200 kB, and compressing it would cost gitsave
	// more CPU than the poll itself.
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, DisableCompression: true}}, nil
}

// gitsaveGet fetches a path from gitsave-apiserver's own port.
func (c *cluster) gitsaveGet(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.gitsaveURL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.direct.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return b, err
}

// factsHeld reads gitsave_attribution_facts: admitted edits whose watch event
// gitsave has not consumed yet. Zero means every edit so far reached a worker.
func (c *cluster) factsHeld(ctx context.Context) (int, error) {
	b, err := c.gitsaveGet(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "gitsave_attribution_facts "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("gitsave_attribution_facts not in /metrics")
}

// cpuMeter snapshots CPU time of every process of the instance and of the
// driver itself (including the git CLI processes it ran and waited for).
type cpuMeter struct {
	c     *cluster
	start map[string]time.Duration
	total map[string]time.Duration
}

func (c *cluster) meter() *cpuMeter {
	return &cpuMeter{c: c, total: map[string]time.Duration{}}
}

func (c *cluster) cpuNow() map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, p := range c.procs {
		if d, err := p.CPU(); err == nil {
			out[name] = d
		}
	}
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	out["driver"] = tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
	return out
}

// Start and Stop bracket the work to count; a meter accumulates over many
// brackets.
func (m *cpuMeter) Start() { m.start = m.c.cpuNow() }

func (m *cpuMeter) Stop() {
	for k, v := range m.c.cpuNow() {
		m.total[k] += v - m.start[k]
	}
}

// Per returns the accumulated CPU divided by n operations.
func (m *cpuMeter) Per(n int) results.CPU {
	if n == 0 {
		return results.CPU{}
	}
	ms := func(k string) float64 { return float64(m.total[k]) / float64(time.Millisecond) / float64(n) }
	return results.CPU{
		Gitsave: ms("gitsave-apiserver"), Kube: ms("kube-apiserver"), Etcd: ms("etcd"),
		GitServer: ms("git-http-server"), Driver: ms("driver"),
	}
}

// peak resets gitsave-apiserver's VmHWM and returns a func reading it.
func (c *cluster) peak() (read func() (peak, start float64)) {
	p := c.procs["gitsave-apiserver"]
	_, start, _ := p.Memory()
	_ = p.ResetPeak()
	return func() (float64, float64) {
		hwm, _, _ := p.Memory()
		return hwm, start
	}
}
