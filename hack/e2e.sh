#!/usr/bin/env bash
# Runs the e2e suite (test/e2e) against the local control plane, started for the run
# and stopped afterwards, and reports how many e2e tests ran.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if ! compgen -G "test/e2e/*_test.go" >/dev/null; then
  echo "e2e: no e2e tests yet" >&2
  exit 0
fi
# Leave a control plane that a developer started running; stop one started here.
source hack/local/lib.sh
is_running kube-apiserver || trap 'hack/local/down.sh' EXIT
# Test this tree's servers, never binaries left in _output/bin by an earlier build
# (go build is incremental; up.sh restarts a running server whose binary is newer).
LOCAL_REBUILD=1 hack/local/up.sh
mkdir -p _output
set +e
GITSAVE_LOCAL_ENV=$LOCAL_DIR/env.sh go test -tags e2e -count=1 -timeout 30m ./test/e2e/... -v >_output/e2e.log 2>&1
rc=$?
set -e
grep -E '^\s*(--- |PASS|FAIL|ok )' _output/e2e.log || true
echo "e2e tests run: $(grep -cE '^\s*--- (PASS|FAIL)' _output/e2e.log) (log: _output/e2e.log)"
if [[ $rc -ne 0 ]]; then
  tail -50 _output/e2e.log >&2
  exit "$rc"
fi
