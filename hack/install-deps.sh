#!/usr/bin/env bash
# Installs the machine packages the build and tests use, when missing: git (the remote
# is served by git http-backend), openssl (local PKI), curl. Go and kubectl come with
# the machine image; kube-apiserver and etcd are built from Go modules.
set -euo pipefail
missing=()
for cmd in git openssl curl; do
  command -v "$cmd" >/dev/null || missing+=("$cmd")
done
[[ -x /usr/lib/git-core/git-http-backend ]] || missing+=(git)
if ((${#missing[@]})); then
  echo "installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "go is required (Go 1.26)" >&2; exit 1; }
command -v kubectl >/dev/null || { echo "kubectl is required on the PATH" >&2; exit 1; }
