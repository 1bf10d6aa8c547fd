# shellcheck shell=bash disable=SC2034 # variables are used by the scripts sourcing this
# Shared by hack/local/up.sh and down.sh; meant to be sourced, not run.
# Every background process gets a pid file and a log under $LOCAL_DIR, so down.sh can
# stop exactly what up.sh started and nothing else.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$ROOT/_output/bin
# GITSAVE_LOCAL_DIR runs a second, independent control plane (e.g. for benchmarks),
# together with other LOCAL_*_PORT values.
LOCAL_DIR=${GITSAVE_LOCAL_DIR:-$ROOT/_output/local}
PKI=$LOCAL_DIR/pki

# Ports: overridable, but run down.sh before changing them (running processes keep theirs).
ETCD_PORT=${LOCAL_ETCD_PORT:-22379}
ETCD_PEER_PORT=${LOCAL_ETCD_PEER_PORT:-22380}
KUBE_PORT=${LOCAL_KUBE_PORT:-16443}
GIT_PORT=${LOCAL_GIT_PORT:-18080}
GITSAVE_PORT=${LOCAL_GITSAVE_PORT:-18443}

# The processes up.sh manages, in start order (down.sh stops them in reverse).
SERVICES=(etcd kube-apiserver git-http-server gitsave-apiserver)

log() { printf '[local %3ds] %s\n' "$SECONDS" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# pid_of NAME: the pid recorded by start_bg, or nothing.
pid_of() { sed -n 1p "$LOCAL_DIR/$1.pid" 2>/dev/null || true; }

# alive PID: the process exists and has not exited. An exited child stays a zombie
# until its parent reaps it, and kill -0 still succeeds on a zombie; here pid 1 (the
# parent of our detached processes) can take over a second to reap.
alive() {
  local stat
  read -r stat 2>/dev/null < "/proc/$1/stat" || return 1
  stat=${stat##*) } # field 3, after "(comm) "
  [[ ${stat%% *} != Z ]]
}

# is_running NAME: the recorded pid is alive AND still runs the program start_bg
# launched (line 2 of the pid file), so a recycled pid is never mistaken for ours.
is_running() {
  local pid argv0
  pid=$(pid_of "$1")
  argv0=$(sed -n 2p "$LOCAL_DIR/$1.pid" 2>/dev/null || true)
  [[ -n $pid ]] && alive "$pid" || return 1
  [[ "$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | head -n1)" == "$argv0" ]]
}

# start_bg NAME CMD...: start CMD detached (own session, so neither Ctrl-C in the
# calling shell nor the caller's exit takes it down), output to $LOCAL_DIR/NAME.log.
# The pid is written by the process itself just before exec, so it is the real one
# even if setsid had to fork.
start_bg() {
  local name=$1; shift
  local pidfile=$LOCAL_DIR/$name.pid
  rm -f "$pidfile" "$pidfile.tmp"
  # shellcheck disable=SC2016 # $$ and $@ belong to the inner bash
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$pidfile.tmp" "$@" \
    </dev/null >>"$LOCAL_DIR/$name.log" 2>&1 &
  local i
  for ((i = 0; i < 50; i++)); do [[ -s $pidfile.tmp ]] && break; sleep 0.1; done
  [[ -s $pidfile.tmp ]] || die "$name did not start"
  printf '%s\n%s\n' "$(cat "$pidfile.tmp")" "$1" > "$pidfile"
  rm -f "$pidfile.tmp"
  log "started $name (pid $(pid_of "$name"), log $LOCAL_DIR/$name.log)"
}

# stop NAME: TERM, up to 10 s grace, then KILL; always removes the pid file.
stop() {
  local name=$1 pid i
  if is_running "$name"; then
    pid=$(pid_of "$name")
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      log "$name (pid $pid) ignored TERM for 10 s, killing"
      kill -KILL "$pid" 2>/dev/null || true
      while alive "$pid"; do sleep 0.1; done
    fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$LOCAL_DIR/$name.pid"
}

# wait_http NAME URL [CURL-ARGS...]: wait up to 60 s for URL to answer 2xx, failing
# early (with the log tail) if process NAME dies meanwhile.
wait_http() {
  local name=$1 url=$2; shift 2
  local deadline=$((SECONDS + ${WAIT_TIMEOUT:-60}))
  until curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2>/dev/null; do
    if ! is_running "$name" || ((SECONDS >= deadline)); then
      log "$name is not healthy at $url; last log lines:"
      tail -n 30 "$LOCAL_DIR/$name.log" >&2 || true
      die "$name failed to become ready"
    fi
    sleep 0.2
  done
}

# newer_than_process NAME BINARY: the binary was rebuilt after NAME was started
# (the pid file is written at start, so its mtime is the start time).
newer_than_process() { [[ $2 -nt $LOCAL_DIR/$1.pid ]]; }

# restart_if_args_changed NAME ARGS...: stop NAME when it runs with other arguments
# than these (recorded at start), so the caller starts it again with the new ones.
restart_if_args_changed() {
  local name=$1; shift
  local want; want=$(printf '%s\n' "$@" | sha256sum | cut -d' ' -f1)
  if is_running "$name" && [[ "$(cat "$LOCAL_DIR/$name.args" 2>/dev/null)" != "$want" ]]; then
    log "$name arguments changed; restarting it"
    stop "$name"
  fi
  echo "$want" > "$LOCAL_DIR/$name.args"
}
