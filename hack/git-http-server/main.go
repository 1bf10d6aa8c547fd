// git-http-server serves the bare git repositories under a folder over smart
// HTTP (git http-backend) with basic auth, for the local control plane.
//
//	git-http-server --listen 127.0.0.1:8418 --root DIR --user U --password P
//
// The password may come from $GIT_HTTP_PASSWORD instead of the flag.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gitsave/gitsave/pkg/git/httpbackend"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8418", "address to listen on")
	root := flag.String("root", "", "folder holding the bare repositories (served at /<name>)")
	user := flag.String("user", "", "basic auth user (empty: no auth)")
	password := flag.String("password", "", "basic auth password (default $GIT_HTTP_PASSWORD)")
	flag.Parse()
	if *root == "" {
		log.Fatal("--root is required")
	}
	if *password == "" {
		*password = os.Getenv("GIT_HTTP_PASSWORD")
	}
	if *user != "" && *password == "" {
		log.Fatal("--user needs --password or $GIT_HTTP_PASSWORD")
	}
	h, err := httpbackend.New(*root, *user, *password)
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	srv := &http.Server{Addr: *listen, Handler: logRequests(h), ReadHeaderTimeout: 10 * time.Second}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("serving git repositories under %s on http://%s", *root, *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	<-drained // Shutdown returns once in-flight requests are done
	log.Print("stopped")
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		log.Printf("%s %s %d %s", r.Method, r.URL.RequestURI(), sw.status, time.Since(start).Round(time.Millisecond))
	})
}
