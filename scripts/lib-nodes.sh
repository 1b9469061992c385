# shellcheck shell=bash
# scripts/lib-nodes.sh - shell functions over scripts/nodes, for the
# multi-node tests (tests/multi), demos and benchmarks.  Source it:
#
#   . scripts/lib-nodes.sh
#   nodes_init mytest            # private dir, cleanup on exit, paths
#   nodes_up --mode loopback -n 4 --daemon-args "--peer-timeout-ms 1000"
#   nodes_client 2 -- prog args  # background, on node 2; log kept
#   nodes_restart 2              # kill -9 node 2's daemon, start it again
#   nodes_store_kill; nodes_store_start   # --rdv tcp: the store daemon
#   nodes_wait_all || ...        # every background client exited 0?
#   nodes_stat 1 '.daemon.wire_bad'
#
# Everything lives in $NODES_TMP (a fresh directory under /tmp): the
# harness's RUNDIR ($NODES_DIR), the clients' logs ($NODES_TMP/logs) and a
# sync directory ($NODES_SYNC, exported as SHF_TEST_SYNC).  On exit the
# nodes are brought down and $NODES_TMP removed (NODES_KEEP=1 keeps it and
# says where).  Functions return non-zero on failure; nothing here exits
# except the exit trap.

NODES_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NODES_SCRIPT=$NODES_TOP/scripts/nodes
NODES_PIDS=()   # background clients started by nodes_client
NODES_NAMES=()  # their log names

# nodes_init NAME: set up the private directory and the exit trap.
nodes_init() {
  NODES_NAME=$1
  NODES_TMP=$(mktemp -d "/tmp/shfmn.XXXXXX") || return 1
  NODES_DIR=$NODES_TMP/r
  NODES_SYNC=$NODES_TMP/sync
  mkdir -p "$NODES_TMP/logs" "$NODES_SYNC"
  export SHF_TEST_SYNC=$NODES_SYNC
  NODES_BUILD=${SHF_BUILD_DIR:-${SHF_TEST_BUILD_DIR:-$NODES_TOP/build}}
  export SHF_BUILD_DIR=$NODES_BUILD
  trap nodes_cleanup EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
}

nodes_cleanup() {
  local rc=$? p
  trap - EXIT
  for p in "${NODES_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  if [ -n "${NODES_DIR-}" ] && [ -d "$NODES_DIR" ]; then
    "$NODES_SCRIPT" down --dir "$NODES_DIR" ${NODES_KEEP:+--keep} >/dev/null 2>&1
  fi
  if [ -n "${NODES_KEEP-}" ]; then
    echo "$NODES_NAME: kept $NODES_TMP" >&2
  elif [ -n "${NODES_TMP-}" ]; then
    rm -rf "$NODES_TMP"
  fi
  exit "$rc"
}

# nodes_up ARGS...: scripts/nodes up --dir $NODES_DIR ARGS; loads RUNDIR/env.
# Exit status 77 (no namespaces here) is passed on.
nodes_up() {
  "$NODES_SCRIPT" up --dir "$NODES_DIR" --quiet "$@" || return $?
  # shellcheck disable=SC1091
  . "$NODES_DIR/env"
}

nodes_down() { "$NODES_SCRIPT" down --dir "$NODES_DIR" "$@"; }

# nodes_restart I [--signal SIG]: stop node I's daemon (SIGKILL by default)
# and start it again with the same command line and environment (static or
# dir rendezvous; refused for mpi-launched daemons); waits until its socket
# answers, then reloads RUNDIR/env (SHF_NODES_PID_I is the new pid).
nodes_restart() {
  local i=$1
  shift
  "$NODES_SCRIPT" restart --dir "$NODES_DIR" --node "$i" --quiet "$@" || return $?
  # shellcheck disable=SC1091
  . "$NODES_DIR/env"
}

# nodes_store_kill [--signal SIG]: (--rdv tcp) stop the store daemon
# (SIGKILL by default); the nodes keep running.
nodes_store_kill() {
  "$NODES_SCRIPT" store-kill --dir "$NODES_DIR" --quiet "$@" || return $?
  # shellcheck disable=SC1091
  . "$NODES_DIR/env"
}

# nodes_store_start: (--rdv tcp) start the store daemon again, same command
# line and environment (an empty store); waits until it listens, then
# reloads RUNDIR/env (SHF_NODES_STORE_PID is the new pid).
nodes_store_start() {
  "$NODES_SCRIPT" store-start --dir "$NODES_DIR" --quiet "$@" || return $?
  # shellcheck disable=SC1091
  . "$NODES_DIR/env"
}
nodes() { "$NODES_SCRIPT" "$1" --dir "$NODES_DIR" "${@:2}"; }

# nodes_var NAME I: the value of SHF_NODES_NAME_I.
nodes_var() { local v="SHF_NODES_$1_$2"; echo "${!v-}"; }

# nodes_client NODE NAME [--] CMD...: run CMD on node NODE in the
# background, output in $NODES_TMP/logs/NAME.log; remembered for
# nodes_wait_all.  Environment as the caller's (SHF_RANK, SHF_JOB, ...).
nodes_client() {
  local node=$1 name=$2
  shift 2
  [ "${1-}" = -- ] && shift
  "$NODES_SCRIPT" run --dir "$NODES_DIR" --node "$node" -- "$@" \
    >"$NODES_TMP/logs/$name.log" 2>&1 &
  NODES_PIDS+=("$!")
  NODES_NAMES+=("$name")
}

# nodes_reap: collect the exit status of background clients that have
# ended (zombies), so that waits can notice a failed client early.
declare -A NODES_STATUS=()
nodes_reap() {
  local p st
  for p in "${NODES_PIDS[@]}"; do
    [ -n "${NODES_STATUS[$p]-}" ] && continue
    read -r _ _ st _ 2>/dev/null < "/proc/$p/stat" || st=Z
    if [ "$st" = Z ]; then
      wait "$p"
      NODES_STATUS[$p]=$?
    fi
  done
}

# nodes_failed_client: 0 (and the failed client's log on stderr) when a
# background client already exited non-zero.
nodes_failed_client() {
  local i p
  nodes_reap
  for i in "${!NODES_PIDS[@]}"; do
    p=${NODES_PIDS[$i]}
    if [ -n "${NODES_STATUS[$p]-}" ] && [ "${NODES_STATUS[$p]}" != 0 ]; then
      echo "--- ${NODES_NAMES[$i]} exited ${NODES_STATUS[$p]}:" >&2
      tail -n 30 "$NODES_TMP/logs/${NODES_NAMES[$i]}.log" >&2
      return 0
    fi
  done
  return 1
}

# nodes_wait_all: wait for every client started by nodes_client; print the
# log of each that failed.  0 when all exited 0.
nodes_wait_all() {
  local i rc=0 r p
  for i in "${!NODES_PIDS[@]}"; do
    p=${NODES_PIDS[$i]}
    if [ -n "${NODES_STATUS[$p]-}" ]; then
      r=${NODES_STATUS[$p]}
    else
      wait "$p"
      r=$?
    fi
    if [ "$r" != 0 ]; then
      echo "--- ${NODES_NAMES[$i]} exited $r:" >&2
      tail -n 30 "$NODES_TMP/logs/${NODES_NAMES[$i]}.log" >&2
      rc=1
    fi
  done
  NODES_PIDS=()
  NODES_NAMES=()
  NODES_STATUS=()
  return $rc
}

# nodes_sync_wait NAME...: wait for sync files (posted by clients) to
# exist; NODES_SYNC_TIMEOUT_MS (default 60000) bounds the wait.  Fails
# early when a background client has failed.
nodes_sync_wait() {
  local n end k=0
  end=$(( $(nodes_now_ms) + ${NODES_SYNC_TIMEOUT_MS:-60000} ))
  for n in "$@"; do
    until [ -e "$NODES_SYNC/$n" ]; do
      [ "$(nodes_now_ms)" -lt "$end" ] || { echo "sync point $n never came" >&2; return 1; }
      if [ $((++k % 20)) = 0 ] && nodes_failed_client; then
        echo "(waiting for sync point $n)" >&2
        return 1
      fi
      sleep 0.01
    done
  done
}
nodes_sync_post() { local n; for n in "$@"; do : > "$NODES_SYNC/$n"; done; }

nodes_now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }

# nodes_json NODE CMD: shufflectl CMD --json on node NODE.
nodes_json() { "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET "$1")" "$2" --json; }

# nodes_stat NODE JQ: one value from `shufflectl stats --json` of node NODE.
nodes_stat() { nodes_json "$1" stats | jq -r "$2"; }

# nodes_peer_state NODE PEER_ID: "up"/"down" as node NODE sees daemon node
# id PEER_ID (0-based; node I is id I-1), or nothing when NODE does not answer.
nodes_peer_state() {
  nodes_json "$1" peers 2>/dev/null | jq -r --argjson p "$2" '.peers[] | select(.node == $p) | .state'
}

# nodes_wait_peer_state NODE PEER_ID STATE TIMEOUT_MS: wait until node NODE
# sees PEER_ID in STATE; prints the milliseconds it took; 1 on timeout.
nodes_wait_peer_state() {
  local t0 end s
  t0=$(nodes_now_ms)
  end=$(( t0 + $4 ))
  while :; do
    s=$(nodes_peer_state "$1" "$2")
    [ "$s" = "$3" ] && { echo $(( $(nodes_now_ms) - t0 )); return 0; }
    [ "$(nodes_now_ms)" -lt "$end" ] || { echo "$s"; return 1; }
    sleep 0.02
  done
}

# nodes_rss_kb PID: VmRSS in KiB.
nodes_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# nodes_cpu_ns PID: CPU time used so far (user + system), nanoseconds, from
# /proc/PID/schedstat (falls back to utime+stime of /proc/PID/stat, in
# clock ticks, converted).
nodes_cpu_ns() {
  local s
  if read -r s _ < "/proc/$1/schedstat" 2>/dev/null && [ -n "$s" ]; then
    echo "$s"
    return
  fi
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000000000 / hz }' \
    "/proc/$1/stat"
}

# nodes_logs: the tail of every daemon log (for failure reports).
nodes_logs() {
  local i
  for i in $(seq 1 "${SHF_NODES_N:-0}"); do
    local f
    f=$(nodes_var LOG "$i")
    [ -f "$f" ] && { echo "--- daemon log of node $i ($f):"; tail -n "${1:-15}" "$f"; }
  done >&2
  local s=${SHF_NODES_STORE_LOG-}
  if [ -n "$s" ] && [ -f "$s" ]; then
    { echo "--- store daemon log ($s):"; tail -n "${1:-15}" "$s"; } >&2
  fi
}
