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

# t_daemons_alive: every daemon of the run still answers.
t_daemons_alive() {
  local i
  for i in $(seq 1 "$SHF_NODES_N"); do
    [ -n "$(nodes_var EXTERNAL "$i")" ] && continue
    "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET "$i")" status >/dev/null 2>&1 ||
      t_fail "the daemon of node $i does not answer any more"
  done
}
