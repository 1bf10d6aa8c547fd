#!/usr/bin/env bash
# make local-down: stop exactly the processes hack/local/up.sh started (by pid file),
# in reverse start order. Keeps PKI, etcd data and the Git remote so the next up is
# quick and state survives; --purge deletes all of _output/local as well.
set -euo pipefail
# shellcheck source=hack/local/lib.sh
source "$(dirname "$0")/lib.sh"

purge=
case ${1:-} in
  --purge) purge=1 ;;
  "") ;;
  *) die "usage: $0 [--purge]" ;;
esac

for ((i = ${#SERVICES[@]} - 1; i >= 0; i--)); do
  stop "${SERVICES[i]}"
done

if [[ -n $purge ]]; then
  rm -rf "$LOCAL_DIR"
  log "down; removed $LOCAL_DIR"
else
  log "down (state kept in $LOCAL_DIR; --purge to remove it)"
fi
