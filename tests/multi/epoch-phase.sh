#!/usr/bin/env bash
# tests/multi/epoch-phase.sh - the epoch as a phase boundary: no callback
# for a record sent after its sender returned from epoch k runs before its
# destination returned from epoch k (docs/api.md), in poll mode and with a
# delivery thread, for sends and broadcasts.
#
# 4 nodes x 2 ranks of mn-client phases: level-synchronous rounds (random
# sends + one broadcast per level, then shf_epoch()), as a BFS makes them.
# Each callback checks that the record's level is the level its rank is
# in.  The epoch tree's root node (node 1 here) completes each epoch first;
# its ranks' next level goes straight to node 4, while the completion
# reaches node 4 through node 2.  Without the hold, those records ran at
# node 4's ranks while they still waited in the same epoch.
T=multi-epoch-phase
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
N=4 K=2 W=8
t_up --mode loopback -n $N
export SHF_WORLD=$W
for thread in ${PHASE_MODES:-0 1}; do
  export SHF_JOB=phase$thread
  rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release
  for r in $(seq 0 $((W - 1))); do
    SHF_RANK=$r nodes_client $((r / K + 1)) "t$thread-rank$r" "$MNCLIENT" phases \
      thread=$thread count=${PHASE_LEVELS:-40} m=${PHASE_M:-64} timeout=30000
  done
  NODES_SYNC_TIMEOUT_MS=60000 t_release_held $(seq 0 $((W - 1)))
  nodes_wait_all || t_fail "thread=$thread: a record ran outside its level (or was lost)"
  t_note "thread=$thread: $(grep -h 'out-of-level' "$NODES_TMP"/logs/t$thread-rank*.log | awk '{s+=$NF} END {print NR " ranks, " s " out-of-level"}')"
done
