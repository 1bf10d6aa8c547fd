#!/usr/bin/env bash
# Fails when generated code or CRD manifests differ from what hack/update-codegen.sh
# makes from the current API types.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Regenerate in a copy of the tree so the working tree is never touched.
tar -C "$root" --exclude=./_output --exclude=./.git -cf - . | tar -C "$tmp" -xf -
# Share the installed generators with the tree so they are built once.
mkdir -p "$root/_output/codegen-bin" "$tmp/_output"
ln -s "$root/_output/codegen-bin" "$tmp/_output/codegen-bin"
(cd "$tmp" && hack/update-codegen.sh >/dev/null)

# The copy started equal to the tree, so any difference under these paths is generated
# output that is stale, missing or no longer made.
if ! diff -ruN "$root/pkg" "$tmp/pkg" >"$tmp.diff" \
   || ! diff -ruN "$root/artifacts/crds" "$tmp/artifacts/crds" >>"$tmp.diff" \
   || ! diff -uN "$root/hack/api_violations.list" "$tmp/hack/api_violations.list" >>"$tmp.diff"; then
  head -40 "$tmp.diff" >&2
  rm -f "$tmp.diff"
  echo "generated code is stale: run hack/update-codegen.sh and commit the result" >&2
  exit 1
fi
rm -f "$tmp.diff"
echo "generated code is up to date"
