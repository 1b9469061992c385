#!/usr/bin/env bash
# tests/multi/epoch-who.sh - an epoch that times out names who holds it
# up across nodes (daemon/epoch.c shd_epoch_who, IPC EPOCH_WHO).
#
# 2 loopback nodes x 2 ranks (mn-client epochwho): ranks 0,1 on daemon
# node id 0 (the root of the job's epoch tree), ranks 2,3 on node id 1.
#  - rank 3 late: ranks 0 and 1 time out naming the root's child subtree,
#    "ranks 2,3 (the subtree of node 1 ...) have not all entered it"; rank
#    2 names its neighbour exactly, "rank 3 (on this node) has not entered
#    it";
#  - rank 0 late: rank 1 gets "rank 0 (on this node) has not entered it";
#    ranks 2 and 3 (their node's count went up) "this node's part of the
#    job is in", waiting for node 0;
# each time every epoch completes once the late rank enters.
T=multi-epoch-who
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
t_up --mode loopback -n 2
round() { # JOB LATE EXPECT0 EXPECT1 EXPECT2 EXPECT3
  local job=$1 late=$2 r
  shift 2
  local want=("$@")
  for r in 0 1 2 3; do
    SHF_JOB=$job SHF_WORLD=4 SHF_RANK=$r nodes_client $((r / 2 + 1)) "$job-rank$r" "$MNCLIENT" \
      epochwho victim="$late" expect="${want[$r]}" timeout=20000
  done
  nodes_wait_all || t_fail "job $job (rank $late late): a rank's timeout did not name who holds the epoch up (above)"
  grep -h "epoch without" "$NODES_TMP"/logs/"$job"-rank*.log
}
round who3 3 "ranks 2,3 (the subtree of node 1" "ranks 2,3 (the subtree of node 1" \
  "rank 3 (on this node) has not entered it" "-"
round who0 0 "-" "rank 0 (on this node) has not entered it" \
  "this node's part of the job is in" "this node's part of the job is in"
t_daemons_alive
if t_sanitizer_reports; then t_fail "a daemon reported memory misuse (above)"; fi
t_note "ok"
