package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gitsave/gitsave/bench/internal/results"
)

// profile takes a CPU profile of gitsave-apiserver (the generic API server
// serves /debug/pprof to system:masters) while saves run back to back, after
// the measured loop so the sampling does not touch the figures.
func (s *saveRun) profile(ctx context.Context) (*results.Profile, error) {
	type answer struct {
		b   []byte
		err error
	}
	s.profiling = true
	defer func() { s.profiling = false }()
	done := make(chan answer, 1)
	go func() {
		b, err := s.c.gitsaveGet(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", s.o.pprofSeconds))
		done <- answer{b, err}
	}()
	saves := 0
	for i := s.o.saves; ; i++ {
		select {
		case a := <-done:
			if a.err != nil {
				return nil, a.err
			}
			file := filepath.Join(s.o.outDir, "gitsave-save.pprof")
			if err := os.WriteFile(file, a.b, 0o644); err != nil {
				return nil, err
			}
			// Flat: where the CPU goes. Cumulative, within gitsave's own
			// packages: which step of a Save it belongs to.
			top, err := pprofTop(ctx, file, "-top", "-nodecount=20")
			if err != nil {
				return nil, err
			}
			cum, err := pprofTop(ctx, file, "-top", "-cum", "-nodecount=30", "-focus=gitsave/gitsave/pkg")
			if err != nil {
				return nil, err
			}
			log.Printf("profile: %d saves in %d s → %s", saves, s.o.pprofSeconds, file)
			return &results.Profile{File: file, Seconds: s.o.pprofSeconds, Saves: saves, Top: top + "\n\n" + cum}, nil
		default:
		}
		if _, err := s.save(ctx, i, nil, false); err != nil {
			return nil, err
		}
		saves++
	}
}

// pprofTop runs go tool pprof and keeps the table (from its header line on).
func pprofTop(ctx context.Context, file string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", append(append([]string{"tool", "pprof"}, args...), file)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %v: %s", err, out)
	}
	s := string(out)
	if i := strings.Index(s, "Showing nodes"); i >= 0 {
		s = s[i:]
	}
	return strings.TrimSpace(s), nil
}
