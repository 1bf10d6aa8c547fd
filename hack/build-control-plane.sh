#!/usr/bin/env bash
# Builds kube-apiserver and etcd from Go modules (hack/tools/go.mod) into _output/bin,
# once per version: the kube-apiserver build takes minutes on 2 cores, so a binary whose
# version stamp matches is reused.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/_output/bin"
mkdir -p "$bin"
cd "$root/hack/tools"

kube_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)

# build NAME VERSION PACKAGE [LDFLAGS]: skip when the stamp file says it is current.
build() {
  local name=$1 version=$2 pkg=$3 ldflags=${4:-}
  if [[ -x "$bin/$name" && "$(cat "$bin/$name.version" 2>/dev/null)" == "$version" ]]; then
    return
  fi
  echo "building $name $version (cached afterwards in _output/bin)" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg"
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$version" > "$bin/$name.version"
}

minor=$(echo "$kube_version" | cut -d. -f2)
ld=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $p.gitVersion=$kube_version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
build kube-apiserver "$kube_version" k8s.io/kubernetes/cmd/kube-apiserver "$ld"
build etcd "$etcd_version" go.etcd.io/etcd/server/v3
