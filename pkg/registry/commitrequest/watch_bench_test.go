package commitrequest

import (
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/save"
)

// BenchmarkWatchFanOut measures the cost of delivering one change to N watchers. Each
// watcher is a real watch request served by the generic API server's handler
// (handlers.ListResource: negotiation, the watch server, its event encoder and
// framing) over this registry, writing into a discarding response writer; only the
// network is missing. One op is one status report (a MODIFIED event) and its delivery
// to every watcher. cpu-ns/op is the process CPU time (all goroutines) per op.
func BenchmarkWatchFanOut(b *testing.B) {
	for _, accept := range []struct{ name, header string }{{"json", acceptJSON}, {"table", acceptTable}} {
		for _, n := range []int{1, 1000} {
			b.Run(accept.name+"/watchers="+strconv.Itoa(n), func(b *testing.B) {
				benchmarkFanOut(b, accept.header, n)
			})
		}
	}
}

func benchmarkFanOut(b *testing.B, accept string, watchers int) {
	r := NewREST(serverScheme, Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))})
	obj, err := r.Create(janeCtx(), &gitsave.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "save-web", Labels: map[string]string{"app": "web", "team": "platform"},
			Annotations: map[string]string{"gitsave.dev/origin": "kubectl"}},
		Spec: gitsave.CommitRequestSpec{TargetRef: gitsave.TargetReference{Name: "dev"},
			Message: "Scale web to 3 replicas and raise its memory limit", CloseDelaySeconds: 10},
	}, nil, &metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cr := obj.(*gitsave.CommitRequest)

	var pending atomic.Int64
	round := make(chan struct{}, 1)
	stop := serveWatches(b, r, "resourceVersion="+cr.ResourceVersion, accept, watchers, false, func(int, []byte) {
		if pending.Add(-1) == 0 {
			round <- struct{}{}
		}
	})
	defer stop()

	report := func(i int) {
		pending.Store(int64(watchers))
		r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonAwaitingPush, Message: "push attempt " + strconv.Itoa(i) + ": connection refused"})
		select {
		case <-round:
		case <-time.After(time.Minute):
			b.Fatalf("change %d reached only %d of %d watchers", i, int64(watchers)-pending.Load(), watchers)
		}
	}
	report(-1) // every watcher's first event; Table watchers' first one carries the headers

	b.ReportAllocs()
	cpu := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		report(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
