#!/usr/bin/env bash
# tests/multi/bcast-lost.sh - a node lost while broadcasts to it wait for
# credit: 3 nodes, one rank each; rank 2 (node 3) never consumes, so rank
# 0's broadcasts stall on node 3's credit; its daemon is then killed.
# Expected: rank 0's broadcasts all return (no hang), its flush reports
# -EHOSTDOWN with dropped_down >= 1, and rank 1 gets every broadcast once,
# in order (bc-client lost).
T="multi-bcast-lost"
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
BCCLIENT=${SHF_TEST_BCCLIENT:-$NODES_BUILD/tests/node/bc-client}
t_need "$BCCLIENT"
t_up --mode loopback -n 3
export SHF_JOB=bcastlost
for r in 0 1 2; do
  SHF_RANK=$r SHF_WORLD=3 nodes_client $((r + 1)) "rank$r" "$BCCLIENT" lost count=4000 size=1000
done
nodes_sync_wait started.0 || t_fail "rank 0 never started"
stalled() { [ "$(nodes_stat 1 '.daemon.credit_stalls')" -gt 0 ]; }
t_until 30000 "node 1 to stall on node 3's credit" stalled
t_note "node 1 stalls on node 3's credit; killing node 3's daemon"
nodes kill --node 3 --signal KILL || t_fail "cannot kill node 3's daemon"
T_KILLED="3"
nodes_sync_post v-exit
nodes_sync_wait sent.0 done.1 || t_fail "rank 0 or rank 1 did not finish"
nodes_sync_post end
nodes_wait_all || t_fail "a rank failed"
grep -h 'rank 0: flush' "$NODES_TMP"/logs/rank0.log
grep -h 'rank 1: got' "$NODES_TMP"/logs/rank1.log
t_fault_check_clean # the survivors answer; no sanitizer report anywhere
t_note "node lost during broadcasts: drops reported, nothing hung, the others got everything: ok"
