package commitrequest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/install"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
)

// serverScheme is the scheme pkg/apiserver serves with (that package imports this
// one, so it cannot be used here).
var serverScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"}, &metav1.Status{})
	return s
}()

var serverCodecs = serializer.NewCodecFactory(serverScheme)

// Media types the watch handler negotiates: what informers and client-go ask for, and
// what kubectl get -w asks for.
const (
	acceptJSON  = "application/json"
	acceptTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
)

// serveWatches starts n watch requests for commitrequests in namespace demo, with the
// given query and Accept header, each served by the generic API server's handler
// (handlers.ListResource: negotiation, the watch server, its event encoder and
// framing) over r into an in-memory response. It returns once every stream has
// begun. onEvent is called from watcher i's serving goroutine for each event it
// flushes, with the event's bytes when capture is set. stop ends the watches.
func serveWatches(tb testing.TB, r *REST, query, accept string, n int, capture bool, onEvent func(i int, data []byte)) (stop func()) {
	tb.Helper()
	scope := &handlers.RequestScope{
		Namer:            handlers.ContextBasedNaming{Namer: meta.NewAccessor()},
		Serializer:       serverCodecs,
		ParameterCodec:   runtime.NewParameterCodec(serverScheme),
		Creater:          serverScheme,
		Convertor:        serverScheme,
		Typer:            serverScheme,
		TableConvertor:   r,
		Resource:         v1alpha1.SchemeGroupVersion.WithResource("commitrequests"),
		Kind:             v1alpha1.SchemeGroupVersion.WithKind("CommitRequest"),
		MetaGroupVersion: metav1.SchemeGroupVersion,
		HubGroupVersion:  gitsave.SchemeGroupVersion,
	}
	handler := handlers.ListResource(r, r, scope, false, time.Hour)

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{}, n)
	started := make(chan struct{}, n)
	stop = func() {
		cancel()
		for range n {
			<-served
		}
	}
	for i := range n {
		reqCtx := genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
			IsResourceRequest: true, Verb: "watch", APIGroup: v1alpha1.GroupName, APIVersion: "v1alpha1",
			Namespace: "demo", Resource: "commitrequests",
		})
		req := httptest.NewRequest(http.MethodGet, "/apis/gitsave.dev/v1alpha1/namespaces/demo/commitrequests?watch=true&"+query, nil).WithContext(reqCtx)
		req.Header.Set("Accept", accept)
		w := &streamWriter{header: http.Header{}, started: started, capture: capture,
			onEvent: func(data []byte) { onEvent(i, data) }}
		go func() {
			defer func() { served <- struct{}{} }()
			handler(w, req)
		}()
	}
	for range n {
		select {
		case <-started:
		case <-time.After(time.Minute):
			stop()
			tb.Fatal("the watches did not start")
		}
	}
	return stop
}

// streamWriter is a watch response that reports each event it is flushed. Writes and
// flushes come from the one goroutine serving the watch.
type streamWriter struct {
	header  http.Header
	started chan<- struct{}
	capture bool
	onEvent func(data []byte)
	buf     []byte
	begun   bool
	wrote   bool
}

func (w *streamWriter) Header() http.Header { return w.header }
func (w *streamWriter) WriteHeader(int)     {}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.wrote = true
	if w.capture {
		w.buf = append(w.buf, p...)
	}
	return len(p), nil
}

// Flush is called once with the headers when the stream begins, then after events.
func (w *streamWriter) Flush() {
	switch {
	case !w.begun:
		w.begun = true
		w.started <- struct{}{}
	case w.wrote:
		w.wrote = false
		var data []byte
		if w.capture {
			data, w.buf = w.buf, nil
		}
		w.onEvent(data)
	}
}
