#!/usr/bin/env bash
# make demo: the local control plane, a Git remote, and one Save round trip.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
hack/local/up.sh
echo "The local control plane is up (source _output/local/env.sh)." >&2
echo "The Save round trip lands with the branch worker (issue 3); nothing to show yet." >&2
