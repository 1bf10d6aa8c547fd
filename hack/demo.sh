#!/usr/bin/env bash
# make demo: the local control plane, a Git remote, and one Save round trip — jane
# applies a bundle with a CommitRequest in it, gitsave commits her edits with her
# message, pushes, and the request reports the SHA. Safe to run again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
hack/install-deps.sh
hack/local/up.sh
# shellcheck source=/dev/null
source _output/local/env.sh
export KUBECACHEDIR=$root/_output/local/kubecache
admin() { kubectl --kubeconfig "$KUBECONFIG_ADMIN" -n demo "$@"; }
jane() { kubectl --kubeconfig "$KUBECONFIG_JANE" -n demo "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "The platform engineer (admin) points gitsave at the Git remote"
admin apply -f - <<EOF
apiVersion: config.gitsave.dev/v1alpha1
kind: GitProvider
metadata: {name: demo-remote}
spec:
  url: $GIT_REMOTE_URL
  secretRef: {name: git-creds}
---
apiVersion: config.gitsave.dev/v1alpha1
kind: GitTarget
metadata: {name: demo}
spec:
  providerRef: {name: demo-remote}
  branch: main
  path: clusters/local
  commitWindow: 10m
---
apiVersion: config.gitsave.dev/v1alpha1
kind: WatchRule
metadata: {name: demo}
spec:
  targetRef: {name: demo}
  rules:
  - {apiGroups: [""], resources: [configmaps]}
  - {apiGroups: [apps], resources: [deployments]}
EOF
admin wait --for=condition=Ready watchrule/demo gittarget/demo --timeout=90s

save=save-$(date +%s)
bundle=$(cat <<EOF
apiVersion: gitsave.dev/v1alpha1
kind: CommitRequest
metadata: {name: $save}
spec:
  targetRef: {name: demo}
  message: "Roll out web with new settings ($(date -u +%H:%M:%S))"
  closeDelaySeconds: 5
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: $((RANDOM % 4 + 2))
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-settings}
data:
  greeting: hello from gitsave
  rolled-out-at: "$(date -u +%FT%TZ)"
EOF
)
say "jane applies a bundle: a Save first, then a Deployment and a ConfigMap"
sed 's/^/    /' <<<"$bundle"
jane apply -f - <<<"$bundle"

say "gitsave attributes the Save to jane, collects the bundle, commits and pushes"
# kubectl itself in the background (not through the function), so kill reaches it.
kubectl --kubeconfig "$KUBECONFIG_JANE" -n demo get commitrequest "$save" --watch --output-watch-events &
watcher=$!
jane wait --for=condition=Ready "commitrequest/$save" --timeout=120s >/dev/null
sleep 1
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true
jane get commitrequest "$save" -o wide

reason=$(jane get commitrequest "$save" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')
[[ $reason == Committed ]] || { echo "the Save ended $reason, not Committed" >&2; exit 1; }
sha=$(jane get commitrequest "$save" -o jsonpath='{.status.sha}')
say "The commit on the remote ($GIT_REMOTE_URL)"
git --git-dir "$GIT_REMOTE_DIR" log -p -1 --stat "$sha"

cat <<EOF

Try next (source _output/local/env.sh first):
  kubectl --kubeconfig \$KUBECONFIG_JANE -n demo scale deployment web --replicas=5
  echo '{"apiVersion":"gitsave.dev/v1alpha1","kind":"CommitRequest","metadata":{"generateName":"save-"},"spec":{"targetRef":{"name":"demo"},"message":"Scale web to 5"}}' \\
    | kubectl --kubeconfig \$KUBECONFIG_JANE -n demo create -f -
  kubectl --kubeconfig \$KUBECONFIG_JANE -n demo get creq -w
  kubectl --kubeconfig \$KUBECONFIG_CAROL -n demo get creq     # forbidden: carol has no rights in demo
  git --git-dir \$GIT_REMOTE_DIR log --format='%h %an: %s' main
  make local-down
EOF
