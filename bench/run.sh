#!/usr/bin/env bash
# make bench: gitsave's benchmarks, with their baselines, in one run.
#
#  1. Go benchmarks, before any control plane runs (a quieter machine):
#     bench/gitbench (commit cost against repository size and against the git
#     CLI) and pkg/registry/commitrequest's watch fan-out, each also for
#     BENCH_BASELINE; plus two CPU profiles (100 vs 50,000 files) to show what
#     grows.
#  2. A control plane of its own (hack/local/up.sh with GITSAVE_LOCAL_DIR and
#     its own ports, never the default instance others run e2e tests on),
#     started clean, driven by bench/cmd/loaddriver, and stopped again, also
#     on failure or Ctrl-C.
#  3. docs/benchmarks.md, written by bench/cmd/benchreport.
#
# Environment:
#   BENCH_FLAGS     extra load driver flags, e.g. '-saves 1000 -rounds 3'
#   GOBENCH_COUNT   rounds of the Go benchmarks (default 5)
#   GOBENCH_TIME    -benchtime of each round (default 1s)
#   BENCH_SKIP_GO=1 reuse _output/bench/gobench.txt instead of running the Go benchmarks
#   BENCH_BASELINE  a commit whose pkg/git (with its own bench/gitbench) is measured in
#                   the same rounds, as "Before..." (default: the last commit before the
#                   raw-tree fix; "" to skip)
#   GITSAVE_LOCAL_DIR, LOCAL_*_PORT  the bench instance (defaults below)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

export GITSAVE_LOCAL_DIR=${GITSAVE_LOCAL_DIR:-$root/_output/bench-local}
export LOCAL_ETCD_PORT=${LOCAL_ETCD_PORT:-23379} LOCAL_ETCD_PEER_PORT=${LOCAL_ETCD_PEER_PORT:-23380}
export LOCAL_KUBE_PORT=${LOCAL_KUBE_PORT:-17443} LOCAL_GIT_PORT=${LOCAL_GIT_PORT:-19080}
export LOCAL_GITSAVE_PORT=${LOCAL_GITSAVE_PORT:-19443}
[[ $GITSAVE_LOCAL_DIR != "$root/_output/local" ]] || { echo "bench: refusing to use the default instance" >&2; exit 1; }

out=$root/_output/bench
count=${GOBENCH_COUNT:-5}
benchtime=${GOBENCH_TIME:-1s}
say() { printf '[bench %3ds] %s\n' "$SECONDS" "$*" >&2; }

mkdir -p "$out/bin" "$root/_output/bin"
# Measure the server of this tree, never a binary left from an earlier build.
go build -o "$root/_output/bin/gitsave-apiserver" ./cmd/apiserver
go build -o "$out/bin/loaddriver" ./bench/cmd/loaddriver
go build -o "$out/bin/benchreport" ./bench/cmd/benchreport
go test -c -o "$out/bin/gitbench.test" ./bench/gitbench
go test -c -o "$out/bin/registry.test" ./pkg/registry/commitrequest

# The same benchmarks of an earlier tree, built from a temporary worktree:
# before/after figures from the same rounds. The commit benchmark is that
# tree's own; the watch fan-out benchmark (newer than it) is this tree's,
# copied in.
baseline=${BENCH_BASELINE-3222912}
rm -f "$out/bin/gitbench-before.test" "$out/bin/registry-before.test"
if [[ -n $baseline ]]; then
  if git cat-file -e "$baseline^{commit}" 2>/dev/null; then
    src=$out/baseline-src
    git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
    git worktree add --quiet --detach "$src" "$baseline"
    (cd "$src" && go test -c -o "$out/bin/gitbench-before.test" ./bench/gitbench)
    cp pkg/registry/commitrequest/watch_bench_test.go pkg/registry/commitrequest/watchserver_test.go "$src/pkg/registry/commitrequest/"
    (cd "$src" && go test -c -o "$out/bin/registry-before.test" ./pkg/registry/commitrequest)
    git worktree remove --force "$src"
  else
    say "baseline $baseline is not in this clone: no before/after figures"
  fi
fi

# --- 1. Go benchmarks ---------------------------------------------------------------
# One process per round, each running every size once, so the sizes and the
# baselines are measured close in time, round after round: slow phases of a
# shared machine hit all of them alike. Fixtures are built once and kept.
fixtures=$out/gitbench-fixtures
if [[ -z ${BENCH_SKIP_GO:-} || ! -s $out/gobench.txt ]]; then
  rm -rf "$fixtures"
  : > "$out/gobench.txt"
  for ((round = 1; round <= count; round++)); do
    say "Go benchmarks: round $round/$count (-benchtime $benchtime)"
    if ! (cd bench/gitbench && GITSAVE_GITBENCH_DIR=$fixtures GITSAVE_GITBENCH_ROUND=$round "$out/bin/gitbench.test" -test.run '^$' \
      -test.bench '^Benchmark(Commit|CLI)' -test.benchmem -test.benchtime "$benchtime") \
      > "$out/gobench-round.log" 2>&1; then
      tail -n 30 "$out/gobench-round.log" >&2
      exit 1
    fi
    grep -E '^Benchmark' "$out/gobench-round.log" | tee -a "$out/gobench.txt" >&2
    if [[ -x $out/bin/gitbench-before.test ]]; then
      if ! (cd bench/gitbench && GITSAVE_GITBENCH_DIR=$fixtures GITSAVE_GITBENCH_ROUND=$round "$out/bin/gitbench-before.test" -test.run '^$' \
        -test.bench '^BenchmarkCommitOneFile' -test.benchmem -test.benchtime "$benchtime") > "$out/gobench-round.log" 2>&1; then
        tail -n 30 "$out/gobench-round.log" >&2
        exit 1
      fi
      grep -E '^Benchmark' "$out/gobench-round.log" | sed 's/^Benchmark/BenchmarkBefore/' | tee -a "$out/gobench.txt" >&2
    fi
    for v in registry registry-before; do
      [[ -x $out/bin/$v.test ]] || continue
      if ! "$out/bin/$v.test" -test.run '^$' -test.bench '^BenchmarkWatchFanOut' -test.benchmem \
        -test.benchtime "$benchtime" > "$out/gobench-round.log" 2>&1; then
        tail -n 30 "$out/gobench-round.log" >&2
        exit 1
      fi
      prefix=Benchmark
      [[ $v == registry ]] || prefix=BenchmarkBefore
      grep -E '^Benchmark' "$out/gobench-round.log" | sed "s/^Benchmark/$prefix/" | tee -a "$out/gobench.txt" >&2
    done
  done
  # The same number of in-memory commits at 100 and at 50,000 files, profiled:
  # the difference is what grows with the repository.
  for n in 100 50000; do
    (cd bench/gitbench && GITSAVE_GITBENCH_DIR=$fixtures "$out/bin/gitbench.test" -test.run '^$' \
      -test.bench "CommitOneFile/storage=memory/files=$n\$" -test.benchtime 200000x \
      -test.cpuprofile "$out/commit-$n.pprof") >/dev/null
  done
  rm -rf "$fixtures"
  go tool pprof -top -nodecount=25 -focus 'git.\(\*Repo\).Commit' -diff_base "$out/commit-100.pprof" \
    "$out/bin/gitbench.test" "$out/commit-50000.pprof" 2>/dev/null |
    sed -n '/flat%/,$p' > "$out/commit-profile.txt"
fi

# --- 2. the bench control plane and the load driver ---------------------------------
down() { hack/local/down.sh >&2 || true; }
say "starting a clean bench instance in $GITSAVE_LOCAL_DIR"
hack/local/down.sh --purge >&2 # whatever an earlier run left, processes included
trap down EXIT
hack/local/up.sh >&2
# shellcheck disable=SC2086 # BENCH_FLAGS is meant to be word-split
"$out/bin/loaddriver" -env "$GITSAVE_LOCAL_DIR/env.sh" -gitsave-url "https://127.0.0.1:$LOCAL_GITSAVE_PORT" \
  -out "$out" -server-binary "$root/_output/bin/gitsave-apiserver" -pprof-seconds 15 ${BENCH_FLAGS:-}
down
trap - EXIT

# --- 3. the report --------------------------------------------------------------------
mkdir -p docs
"$out/bin/benchreport" -results "$out/results.json" -gobench "$out/gobench.txt" \
  -commit-profile "$out/commit-profile.txt" -findings bench/FINDINGS.md -out docs/benchmarks.md \
  -baseline "$(git rev-parse --short "$baseline" 2>/dev/null || echo none)"
say "done: docs/benchmarks.md (raw figures in $out)"
