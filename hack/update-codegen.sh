#!/usr/bin/env bash
# Regenerates everything generated: deepcopy, defaults, conversion, OpenAPI, the typed
# clientset with listers and informers (pkg/generated), and the CRD manifests
# (artifacts/crds). Never edit those files by hand.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
module=github.com/gitsave/gitsave
boilerplate=hack/boilerplate.go.txt

# The generators are installed from the module cache into our own bin directory.
export GOBIN="$root/_output/codegen-bin"
mkdir -p "$GOBIN"
codegen_pkg=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
source "$codegen_pkg/kube_codegen.sh"

kube::codegen::gen_helpers --boilerplate "$boilerplate" pkg/apis

kube::codegen::gen_openapi \
  --output-dir pkg/generated/openapi \
  --output-pkg "$module/pkg/generated/openapi" \
  --output-model-name-file zz_generated.model_name.go \
  --report-filename hack/api_violations.list \
  --update-report \
  --boilerplate "$boilerplate" \
  pkg/apis

kube::codegen::gen_client \
  --with-watch \
  --output-dir pkg/generated \
  --output-pkg "$module/pkg/generated" \
  --boilerplate "$boilerplate" \
  pkg/apis

rm -rf artifacts/crds
go tool controller-gen crd:crdVersions=v1 paths=./pkg/apis/config/... output:crd:dir=artifacts/crds
