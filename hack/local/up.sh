#!/usr/bin/env bash
# make local-up: a real control plane on loopback (etcd + kube-apiserver built from Go
# modules), a Git remote over smart HTTP with basic auth, and gitsave-apiserver behind
# the aggregation layer. Idempotent: a second run with everything healthy is a no-op;
# otherwise it builds what is missing, starts what is not running, restarts
# gitsave-apiserver and git-http-server when their binary is newer than the process,
# and re-applies the (idempotent) manifests.
#
# Environment:
#   GITSAVE_SKIP_SERVER=1  do not build/start gitsave-apiserver nor register its APIService
#   LOCAL_REBUILD=1        go build gitsave-apiserver and git-http-server even if present
#   GITSAVE_EXTRA_ARGS     extra flags for gitsave-apiserver (word-split)
#   LOCAL_{ETCD,ETCD_PEER,KUBE,GIT,GITSAVE}_PORT  ports (defaults in lib.sh)
# Outputs under _output/local: pki/, kubeconfig-{admin,jane,bob,carol,gitsave}, env.sh,
# NAME.pid and NAME.log per process, etcd/ and gitsave/ data, git/demo.git.
set -euo pipefail
# shellcheck source=hack/local/lib.sh
source "$(dirname "$0")/lib.sh"
umask 077 # tokens, keys and the Git password live under _output/local
mkdir -p "$LOCAL_DIR"
cd "$ROOT"

SKIP_SERVER=${GITSAVE_SKIP_SERVER:-}
GIT_USER=gitsave
GITSAVE_USER=system:serviceaccount:gitsave-system:gitsave-apiserver
KC=$LOCAL_DIR/kubeconfig
kadmin() { kubectl --kubeconfig "$KC-admin" "$@"; }
apply() { kadmin apply --server-side --force-conflicts --field-manager=gitsave-local-up "$@" >/dev/null; }

# Anything that changes what the slow path would apply invalidates the fast path.
config_stamp() {
  {
    cat "$ROOT"/hack/local/*.sh "$ROOT"/artifacts/local/* "$ROOT"/artifacts/crds/*.yaml 2>/dev/null || true
    echo "$SKIP_SERVER $ETCD_PORT $ETCD_PEER_PORT $KUBE_PORT $GIT_PORT $GITSAVE_PORT"
  } | sha256sum | cut -d' ' -f1
}

apiservice_available() {
  [[ "$(kadmin get apiservice v1alpha1.gitsave.dev \
    -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" == True ]]
}

# healthy: every process ours and answering, nothing rebuilt since, config unchanged.
healthy() {
  [[ -f $LOCAL_DIR/env.sh && "$(cat "$LOCAL_DIR/stamp" 2>/dev/null)" == "$(config_stamp)" ]] || return 1
  is_running etcd && is_running kube-apiserver && is_running git-http-server || return 1
  curl -fs -o /dev/null --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$KUBE_PORT/readyz" || return 1
  curl -fs -o /dev/null --max-time 2 -u "$GIT_USER:$(cat "$LOCAL_DIR/git-password")" \
    "http://127.0.0.1:$GIT_PORT/demo.git/info/refs?service=git-upload-pack" || return 1
  ! newer_than_process git-http-server "$BIN/git-http-server" || return 1
  [[ -n $SKIP_SERVER ]] && return 0
  is_running gitsave-apiserver && ! newer_than_process gitsave-apiserver "$BIN/gitsave-apiserver" &&
    apiservice_available
}

if [[ -z ${LOCAL_REBUILD:-} && -f $KC-admin ]] && healthy; then
  log "already up and healthy; nothing to do (source $LOCAL_DIR/env.sh)"
  exit 0
fi

# --- tools -------------------------------------------------------------------------
for tool in openssl git curl; do
  if ! command -v "$tool" >/dev/null; then
    log "installing $tool"
    apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null
  fi
done
command -v kubectl >/dev/null || die "kubectl not found on PATH"

# --- binaries ----------------------------------------------------------------------
# kube-apiserver takes minutes to build: never run two builds at once (another up.sh,
# or a build started by hand in the background).
if [[ ! -x $BIN/kube-apiserver || ! -x $BIN/etcd ]]; then
  while pgrep -f 'hack/build-control-plane\.sh' >/dev/null; do
    log "waiting for a running hack/build-control-plane.sh"; sleep 10
  done
fi
mkdir -p "$BIN"
flock "$BIN/.build.lock" "$ROOT/hack/build-control-plane.sh"

go_build() { # NAME PACKAGE
  if [[ ! -x $BIN/$1 || -n ${LOCAL_REBUILD:-} ]]; then
    [[ -d $2 ]] || die "$2 does not exist yet (GITSAVE_SKIP_SERVER=1 skips gitsave-apiserver)"
    log "go build $2"
    go build -o "$BIN/$1" "$2"
  fi
}
go_build git-http-server ./hack/git-http-server
[[ -n $SKIP_SERVER ]] || go_build gitsave-apiserver ./cmd/apiserver

# --- PKI, tokens, passwords (generated once, kept by down.sh unless --purge) -------------
# cert NAME CA SUBJECT EXTENSIONS...: a key and a certificate signed by CA.
cert() {
  local name=$1 ca=$2 subj=$3; shift 3
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -subj "$subj" 2>/dev/null |
    openssl x509 -req -days 3650 -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" \
      -set_serial "0x$(openssl rand -hex 16)" -out "$PKI/$name.crt" 2>/dev/null \
      -extfile <(printf '%s\n' "basicConstraints=critical,CA:FALSE" "$@")
}
ca() { # NAME CN
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$2" \
    -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}
if [[ ! -f $PKI/done ]]; then
  log "generating PKI in $PKI"
  rm -rf "$PKI" && mkdir -p "$PKI"
  server="keyUsage=critical,digitalSignature,keyEncipherment"
  ca ca local-cluster-ca
  cert kube-apiserver ca /CN=kube-apiserver "$server" "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  cert admin ca /O=system:masters/CN=admin "$server" "extendedKeyUsage=clientAuth"
  ca front-proxy-ca local-front-proxy-ca
  cert front-proxy-client front-proxy-ca /CN=front-proxy-client "$server" "extendedKeyUsage=clientAuth"
  ca gitsave-ca local-gitsave-ca
  cert gitsave gitsave-ca /CN=gitsave-apiserver.gitsave-system.svc "$server" "extendedKeyUsage=serverAuth" \
    "subjectAltName=DNS:gitsave-apiserver.gitsave-system.svc,DNS:localhost,IP:127.0.0.1"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  touch "$PKI/done"
fi
# The kube-apiserver's identity when it calls admission webhooks (added after the
# first PKI layout, so made on its own when missing).
[[ -f $PKI/webhook-client.crt ]] || cert webhook-client ca /CN=kube-apiserver-webhook-client \
  "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=clientAuth"

# Admission configuration: webhooks are called with that client certificate.
cat > "$LOCAL_DIR/webhook-kubeconfig" <<EOF
apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: $PKI/webhook-client.crt
    client-key: $PKI/webhook-client.key
EOF
cat > "$LOCAL_DIR/admission-config.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $LOCAL_DIR/webhook-kubeconfig
EOF

# Bearer tokens: token,user,uid,"groups" (kube-apiserver --token-auth-file format).
if [[ ! -f $LOCAL_DIR/tokens.csv ]]; then
  t() { openssl rand -hex 24; }
  cat > "$LOCAL_DIR/tokens.csv" <<EOF
$(t),admin,admin,"system:masters"
$(t),jane,jane,"editors"
$(t),bob,bob,"editors"
$(t),carol,carol
$(t),$GITSAVE_USER,gitsave-apiserver,"system:serviceaccounts,system:serviceaccounts:gitsave-system"
EOF
fi
token_of() { awk -F, -v u="$1" '$2 == u { print $1 }' "$LOCAL_DIR/tokens.csv"; }
[[ -f $LOCAL_DIR/git-password ]] || openssl rand -hex 16 > "$LOCAL_DIR/git-password"
GIT_PASSWORD=$(cat "$LOCAL_DIR/git-password")

# --- etcd and kube-apiserver ---------------------------------------------------------
if ! is_running etcd; then
  start_bg etcd "$BIN/etcd" --name local --data-dir "$LOCAL_DIR/etcd" --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT"
fi
wait_http etcd "http://127.0.0.1:$ETCD_PORT/health"

# --shutdown-send-retry-after: otherwise SIGTERM waits 60 s while any watch is open.
# --requestheader-*/--proxy-client-*: the aggregation layer (front proxy to gitsave).
# --admission-control-config-file: webhooks are called with a client certificate.
kube_args=(
  --bind-address 127.0.0.1 --secure-port "$KUBE_PORT" --cert-dir "$LOCAL_DIR"
  --etcd-servers "http://127.0.0.1:$ETCD_PORT"
  --tls-cert-file "$PKI/kube-apiserver.crt" --tls-private-key-file "$PKI/kube-apiserver.key"
  --client-ca-file "$PKI/ca.crt" --token-auth-file "$LOCAL_DIR/tokens.csv"
  --authorization-mode RBAC
  --service-account-issuer https://kubernetes.default.svc
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key"
  --service-cluster-ip-range 10.0.0.0/24
  --shutdown-send-retry-after=true
  --admission-control-config-file "$LOCAL_DIR/admission-config.yaml"
  --requestheader-client-ca-file "$PKI/front-proxy-ca.crt"
  --requestheader-allowed-names front-proxy-client
  --requestheader-username-headers X-Remote-User
  --requestheader-group-headers X-Remote-Group
  --requestheader-extra-headers-prefix X-Remote-Extra-
  --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key"
)
restart_if_args_changed kube-apiserver "${kube_args[@]}"
is_running kube-apiserver || start_bg kube-apiserver "$BIN/kube-apiserver" "${kube_args[@]}"
wait_http kube-apiserver "https://127.0.0.1:$KUBE_PORT/readyz" --cacert "$PKI/ca.crt"

# kubeconfig NAME USER-YAML: written directly (20 kubectl config calls take ~1 s).
b64() { base64 -w0 < "$1"; }
kubeconfig() {
  cat > "$KC-$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$KUBE_PORT
    certificate-authority-data: $(b64 "$PKI/ca.crt")
users:
- name: $1
  user: $2
contexts:
- name: local
  context: {cluster: local, user: $1}
current-context: local
EOF
}
kubeconfig admin "{client-certificate-data: $(b64 "$PKI/admin.crt"), client-key-data: $(b64 "$PKI/admin.key")}"
for u in jane bob carol; do kubeconfig "$u" "{token: $(token_of "$u")}"; done
kubeconfig gitsave "{token: $(token_of "$GITSAVE_USER")}"

# --- namespaces, RBAC, CRDs ----------------------------------------------------------
log "applying namespaces, RBAC and CRDs"
apply -f artifacts/local/rbac.yaml
if compgen -G "artifacts/crds/*.yaml" >/dev/null; then
  apply -f artifacts/crds/
  kadmin wait --for condition=Established --timeout 30s -f artifacts/crds/ >/dev/null
else
  log "no artifacts/crds/*.yaml yet; skipping CRDs"
fi

# --- Git remote ----------------------------------------------------------------------
GIT_ROOT=$LOCAL_DIR/git
if [[ ! -d $GIT_ROOT/demo.git ]]; then
  git init -q --bare -b main "$GIT_ROOT/demo.git"
  git -C "$GIT_ROOT/demo.git" config http.receivepack true # allow pushes over HTTP
fi
if is_running git-http-server && newer_than_process git-http-server "$BIN/git-http-server"; then
  log "git-http-server was rebuilt; restarting it"
  stop git-http-server
fi
if ! is_running git-http-server; then
  # The password goes in the environment, not argv, where ps would show it.
  GIT_HTTP_PASSWORD=$GIT_PASSWORD start_bg git-http-server "$BIN/git-http-server" \
    --listen "127.0.0.1:$GIT_PORT" --root "$GIT_ROOT" --user "$GIT_USER"
fi
wait_http git-http-server "http://127.0.0.1:$GIT_PORT/demo.git/info/refs?service=git-upload-pack" \
  -u "$GIT_USER:$GIT_PASSWORD"

kadmin create secret generic git-creds -n demo --type kubernetes.io/basic-auth \
  --from-literal "username=$GIT_USER" --from-literal "password=$GIT_PASSWORD" \
  --dry-run=client -o yaml | apply -f -

# --- gitsave-apiserver behind the aggregator --------------------------------------------
if [[ -n $SKIP_SERVER ]]; then
  log "GITSAVE_SKIP_SERVER set: not starting gitsave-apiserver"
  # An APIService left from an earlier run with no server behind it breaks discovery.
  is_running gitsave-apiserver || kadmin delete apiservice v1alpha1.gitsave.dev --ignore-not-found >/dev/null
else
  if is_running gitsave-apiserver && newer_than_process gitsave-apiserver "$BIN/gitsave-apiserver"; then
    log "gitsave-apiserver was rebuilt; restarting it"
    stop gitsave-apiserver
  fi
  mkdir -p "$LOCAL_DIR/gitsave"
  # shellcheck disable=SC2206 # GITSAVE_EXTRA_ARGS is meant to be word-split
  gitsave_args=(
    --bind-address 127.0.0.1 --secure-port "$GITSAVE_PORT"
    --tls-cert-file "$PKI/gitsave.crt" --tls-private-key-file "$PKI/gitsave.key"
    --kubeconfig "$KC-gitsave" --authentication-kubeconfig "$KC-gitsave"
    --authorization-kubeconfig "$KC-gitsave" --data-dir "$LOCAL_DIR/gitsave"
    --attribution-webhook-url "https://127.0.0.1:$GITSAVE_PORT/webhooks/attribution"
    --attribution-webhook-ca-file "$PKI/gitsave-ca.crt"
    ${GITSAVE_EXTRA_ARGS:-}
  )
  restart_if_args_changed gitsave-apiserver "${gitsave_args[@]}"
  is_running gitsave-apiserver || start_bg gitsave-apiserver "$BIN/gitsave-apiserver" "${gitsave_args[@]}"
  # Only the leader is Ready; a single local instance becomes leader within a lease.
  wait_http gitsave-apiserver "https://127.0.0.1:$GITSAVE_PORT/readyz" --cacert "$PKI/gitsave-ca.crt" \
    -H "Authorization: Bearer $(token_of admin)"

  # ExternalName localhost: the aggregator dials localhost:<spec.service.port>; Endpoints
  # on 127.0.0.1 are rejected and ClusterIPs are not routable without kube-proxy.
  apply -f - <<EOF
apiVersion: v1
kind: Service
metadata:
  name: gitsave-apiserver
  namespace: gitsave-system
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - name: https
    port: $GITSAVE_PORT
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.gitsave.dev
spec:
  group: gitsave.dev
  version: v1alpha1
  service:
    name: gitsave-apiserver
    namespace: gitsave-system
    port: $GITSAVE_PORT
  caBundle: $(b64 "$PKI/gitsave-ca.crt")
  groupPriorityMinimum: 1000
  versionPriority: 15
EOF
  kadmin wait --for condition=Available --timeout 60s apiservice/v1alpha1.gitsave.dev >/dev/null
fi

# --- env.sh (names are a contract: other tools source this file) ---------------------------
cat > "$LOCAL_DIR/env.sh" <<EOF
# Written by hack/local/up.sh.
export KUBECONFIG_ADMIN=$KC-admin
export KUBECONFIG_JANE=$KC-jane
export KUBECONFIG_BOB=$KC-bob
export KUBECONFIG_CAROL=$KC-carol
export KUBECONFIG_GITSAVE=$KC-gitsave
export GIT_REMOTE_URL=http://127.0.0.1:$GIT_PORT/demo.git
export GIT_REMOTE_DIR=$GIT_ROOT/demo.git
export GIT_USERNAME=$GIT_USER
export GIT_PASSWORD=$GIT_PASSWORD
EOF
config_stamp > "$LOCAL_DIR/stamp"
log "up: kube-apiserver https://127.0.0.1:$KUBE_PORT, Git remote http://127.0.0.1:$GIT_PORT/demo.git$(
  [[ -n $SKIP_SERVER ]] || echo ", gitsave-apiserver https://127.0.0.1:$GITSAVE_PORT")"
log "source $LOCAL_DIR/env.sh"
