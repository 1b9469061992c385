# shellcheck shell=bash
# tests/multi/common.sh - what every multi-node test driver shares.  Source
# it after setting T (the test's name).  Uses scripts/lib-nodes.sh.
set -uo pipefail
MULTI_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/lib-nodes.sh
. "$MULTI_SRC/scripts/lib-nodes.sh"

t_fail() {
  echo "$T: FAIL: $*" >&2
  nodes_logs 25
  exit 1
}
t_skip() { echo "$T: SKIP: $*" >&2; exit 77; }
t_note() { echo "$T: $*"; }

command -v jq >/dev/null || t_skip "jq is not installed"
nodes_init "$T" || t_fail "cannot create a temporary directory"
# (used by the drivers that source this file)
# shellcheck disable=SC2034
TCLIENT=${SHF_TEST_TCLIENT:-$NODES_BUILD/tests/node/node-tclient}
# shellcheck disable=SC2034
MNCLIENT=${SHF_TEST_MNCLIENT:-$NODES_BUILD/tests/multi/mn-client}
# shellcheck disable=SC2034
WIRE_INJECT=${SHF_TEST_WIRE_INJECT:-$NODES_BUILD/tests/multi/wire-inject}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# t_up ARGS...: bring the nodes up (skip on 77), always with a lifetime
# bound so that nothing outlives a killed test for long.
t_up() {
  nodes_up --lifetime 300 "$@"
  local rc=$?
  [ "$rc" = 77 ] && t_skip "network namespaces are not available here"
  [ "$rc" = 0 ] || t_fail "scripts/nodes up $* failed ($rc)"
  # the multi-mr-* variants force registered memory: make sure every
  # daemon really runs that way (SHF_MR_LOCAL reached it)
  if [ "${SHF_MR_LOCAL:-0}" = 1 ]; then
    local i v
    for i in $(seq 1 "${SHF_NODES_N:-0}"); do
      # a node the test starts itself (--external) is not up yet
      [ "$(nodes_var EXTERNAL "$i")" = 1 ] && continue
      v=$(nodes_json "$i" config | jq -r '.config.mr_local.value')
      [ "$v" = 1 ] || t_fail "node $i runs with mr_local=$v, not 1"
    done
    t_note "registered memory forced on every daemon (mr_local=1)"
  fi
}

t_need() { [ -x "$1" ] || t_skip "$1 is not built"; }

# t_release_held RANKS...: wait until tclient ranks posted held.R (their
# epochs are all done), then let them close together.  Closing only then
# keeps a departing rank from racing another node's last epoch (see
# tests/multi/epoch-leave.sh for that race).
t_release_held() {
  local r
  for r in "$@"; do
    nodes_sync_wait "held.$r" || { nodes_sync_post release; t_fail "rank $r never finished"; }
  done
  nodes_sync_post release
}

# t_daemons_alive: every daemon of the run still answers (but T_KILLED's).
t_daemons_alive() {
  local i
  for i in $(seq 1 "$SHF_NODES_N"); do
    [ -n "$(nodes_var EXTERNAL "$i")" ] && continue
    [[ " ${T_KILLED-} " == *" $i "* ]] && continue
    "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET "$i")" ping >/dev/null 2>&1 ||
      t_fail "the daemon of node $i does not answer any more"
  done
}

# ---- the fault-* tests (shuffled-fault: daemon/net/fabric_io.c's fault-injection
# hook, tests/multi/fault-inject.c)

# t_fault_setup SPEC: the nodes started next run shuffled-fault with
# SHD_FAULT_SEND=SPEC (every daemon gets it; node= names the destination).
t_fault_setup() {
  SHUFFLED_FAULT=${SHF_TEST_SHUFFLED_FAULT:-$NODES_BUILD/tests/multi/shuffled-fault}
  t_need "$SHUFFLED_FAULT"
  export SHF_SHUFFLED=$SHUFFLED_FAULT SHD_FAULT_SEND=$1
}

# t_daemon_out I: node I's daemon stderr (sanitizer reports, fault lines).
t_daemon_out() { echo "$NODES_DIR/logs/$(nodes_var HOST "$1").out"; }

# t_sanitizer_reports: print the sanitizer / allocator reports in any
# daemon's stderr; 0 when there is one.
t_sanitizer_reports() {
  local i f found=1
  for i in $(seq 1 "$SHF_NODES_N"); do
    f=$(t_daemon_out "$i")
    [ -f "$f" ] || continue
    if grep -E -m 12 -A 8 'ERROR: AddressSanitizer|runtime error:|double free|free\(\): |corrupted|malloc\(\): |terminated with signal' "$f" >&2; then
      echo "(in $f)" >&2
      found=0
    fi
  done
  return $found
}

# t_fault_fail MSG: t_fail, with the ranks' logs and each daemon's view of
# its peers first (what a sync point that never came needs).
t_fault_fail() {
  local f i
  for f in "$NODES_TMP"/logs/*.log; do echo "--- $f:"; tail -n 20 "$f"; done >&2
  for i in $(seq 1 "$SHF_NODES_N"); do
    echo "--- node $i peers: $(nodes_json "$i" peers 2>/dev/null | jq -c '[.peers[] |
      {node, state, inflight, queued, open_bytes, parked, msgs_out, msgs_in}]')" >&2
  done
  t_sanitizer_reports
  t_fail "$@"
}

# t_fault_check_clean: every daemon alive and none wrote a sanitizer or
# allocator report.
t_fault_check_clean() {
  if t_sanitizer_reports; then t_fail "a daemon reported memory misuse (above)"; fi
  t_daemons_alive
}

# t_fault_fired I: node I's daemon injected a failure (the test really
# reached the fault, or it proves nothing).
t_fault_fired() {
  grep -h '^fault injection: send' "$(t_daemon_out "$1")" ||
    t_fail "node $1's daemon never injected the fault (is $SHF_SHUFFLED shuffled-fault?)"
}

# t_until MS WHAT CMD...: poll CMD until it succeeds; fail after MS, or at
# once when a daemon died or reported memory misuse (its report is shown).
# Nodes listed in T_KILLED ("2 3") were stopped on purpose: not checked.
t_until() {
  local ms=$1 what=$2 end i
  shift 2
  end=$(( $(nodes_now_ms) + ms ))
  until "$@"; do
    for i in $(seq 1 "$SHF_NODES_N"); do
      [ -n "$(nodes_var EXTERNAL "$i")" ] && continue
      [[ " ${T_KILLED-} " == *" $i "* ]] && continue
      kill -0 "$(nodes_var PID "$i")" 2>/dev/null && continue
      t_sanitizer_reports
      t_fail "node $i's daemon died while waiting for: $what"
    done
    [ "$(nodes_now_ms)" -lt "$end" ] || t_fault_fail "timed out ($ms ms) waiting for: $what"
    sleep 0.05
  done
}

# t_all_up [MS]: wait (t_until, default 30 s) until every node's daemon sees
# the other SHF_NODES_N - 1 up.
t_nodes_see_all_up() {
  local i want=$((SHF_NODES_N - 1))
  for i in $(seq 1 "$SHF_NODES_N"); do
    [ "$(nodes_json "$i" peers 2>/dev/null | jq '[.peers[] | select(.state == "up")] | length')" = "$want" ] || return 1
  done
}
t_all_up() {
  t_until "${1:-30000}" "every node to see the $((SHF_NODES_N - 1)) others up" t_nodes_see_all_up
}

# t_peer_is NODE PEER_ID STATE; t_peer_field NODE PEER_ID FIELD
t_peer_is() { [ "$(nodes_peer_state "$1" "$2")" = "$3" ]; }
t_peer_field() {
  nodes_json "$1" peers 2>/dev/null | jq -r --argjson p "$2" ".peers[] | select(.node == \$p) | .$3"
}
# t_peer_went_down NODE PEER_ID: NODE's session with PEER_ID ended at least
# once (a down peer is probed and may rejoin at once as a new session, so
# "down" alone can be too brief to see).
t_peer_went_down() {
  local st n
  st=$(nodes_json "$1" peers 2>/dev/null | jq -r --argjson p "$2" \
    '.peers[] | select(.node == $p) | "\(.state) \(.sessions)"') || return 1
  read -r st n <<< "$st"
  case "$st" in
    failing|down) return 0 ;;
    joining) [ "${n:-0}" -ge 1 ] ;;
    *) [ "${n:-0}" -ge 2 ] ;;
  esac
}
# t_no_clients NODE: no clients attached to node NODE's daemon (jobs of
# ranks on other nodes may still be known there).
t_no_clients() {
  local s
  s=$(nodes_json "$1" status 2>/dev/null) || return 1
  [ "$(jq -r '.clients' <<< "$s")" = 0 ]
}

# t_idle NODE: no clients, no jobs on node NODE's daemon.
t_idle() {
  local s
  s=$(nodes_json "$1" status 2>/dev/null) || return 1
  [ "$(jq -r '"\(.clients) \(.jobs)"' <<< "$s")" = "0 0" ]
}
