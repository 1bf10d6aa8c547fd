package main

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/gitsave/gitsave/bench/internal/stats"
)

// goBench is one Go benchmark across its -count rounds.
type goBench struct {
	Name    string
	Metrics map[string][]float64 // unit → one value per round
}

// Median of a unit over the rounds (NaN if absent).
func (b *goBench) Median(unit string) float64 {
	return stats.Median(b.Metrics[unit])
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// readGoBench parses `go test -bench` output: "BenchmarkX/y-2  N  v unit  v unit ...".
func readGoBench(path string) (map[string]*goBench, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	out := map[string]*goBench{}
	var order []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), "")
		b := out[name]
		if b == nil {
			b = &goBench{Name: name, Metrics: map[string][]float64{}}
			out[name] = b
			order = append(order, name)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			b.Metrics[fields[i+1]] = append(b.Metrics[fields[i+1]], v)
		}
	}
	return out, order, s.Err()
}
