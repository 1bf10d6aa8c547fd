package git

import (
	"fmt"
	"strconv"
	"testing"
)

var benchSizes = []int{100, 10000, 50000}

// edits numbers benchmark edits across rounds (b.N restarts at 0 each round),
// so every edit changes content.
var edits int

func nextEdit(n int) Change {
	edits++
	return set(manyPath(edits*7919%n), "v"+strconv.Itoa(edits))
}

// benchRepo opens a repository holding n files (depth 2) committed in one
// commit. Setup uses the parent benchmark so it survives the b.N rounds.
func benchRepo(parent *testing.B, rm remote, disk bool, n int) *Repo {
	cache := ""
	if disk {
		cache = parent.TempDir()
	}
	r := rm.open(parent, cache)
	if _, err := r.Commit(manyFiles(n), jane, bot, when, "import"); err != nil {
		parent.Fatal(err)
	}
	push(parent, r)
	return r
}

// BenchmarkCommitOneFile: one changed file at depth 2, in repositories of
// growing size. Cost should stay flat (5 objects: blob, 3 trees, commit).
func BenchmarkCommitOneFile(b *testing.B) {
	for _, storage := range []string{"memory", "disk"} {
		for _, n := range benchSizes {
			var r *Repo
			b.Run(fmt.Sprintf("%s/files=%d", storage, n), func(sub *testing.B) {
				if r == nil {
					r = benchRepo(b, localRemote(b), storage == "disk", n)
				}
				objects := 0
				sub.ReportAllocs()
				sub.ResetTimer()
				for i := 0; i < sub.N; i++ {
					res, err := r.Commit([]Change{nextEdit(n)}, jane, bot, when, "edit")
					if err != nil {
						sub.Fatal(err)
					}
					objects += res.ObjectsWritten
					// Unpushed objects are held in memory until pushed: do not
					// let b.N commits pile up.
					r.ResetToRemote()
				}
				sub.ReportMetric(float64(objects)/float64(sub.N), "objects/op")
			})
		}
	}
}

// BenchmarkCommitAndPushOneFile: commit one file and push it over smart HTTP
// (git http-backend). The pack holds the same 5 objects whatever the size.
func BenchmarkCommitAndPushOneFile(b *testing.B) {
	for _, n := range benchSizes {
		var r *Repo
		b.Run(fmt.Sprintf("files=%d", n), func(sub *testing.B) {
			if r == nil {
				r = benchRepo(b, httpRemote(b), false, n)
				push(b, r)
			}
			objects := 0
			sub.ResetTimer()
			for i := 0; i < sub.N; i++ {
				if _, err := r.Commit([]Change{nextEdit(n)}, jane, bot, when, "edit"); err != nil {
					sub.Fatal(err)
				}
				push(sub, r)
				if err := r.Persist(); err != nil {
					sub.Fatal(err)
				}
				objects += r.LastPush().Objects
			}
			sub.ReportMetric(float64(objects)/float64(sub.N), "pushed-objects/op")
		})
	}
}
