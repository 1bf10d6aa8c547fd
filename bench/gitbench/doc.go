// Package gitbench measures what one Save costs in Git, against repository
// size and against the git CLI, in the same run:
//
//   - BenchmarkCommitOneFile: pkg/git's object-store commit of one changed
//     file (memory and on-disk cache) in repositories of 100, 10,000 and
//     50,000 files.
//   - BenchmarkCLICommitOneFile: the same change with `git add` + `git commit`
//     in a checked-out clone (the baseline).
//   - BenchmarkCommitPushOneFile / BenchmarkCLICommitPushOneFile: the same,
//     pushed over smart HTTP (git http-backend with basic auth, as the local
//     control plane serves it).
//
// The repositories are built with git fast-import (bench/internal/fill) once
// per size and reused across -count rounds. Nothing here asserts a time:
// bench/cmd/benchreport turns the output into medians and ratios.
package gitbench
