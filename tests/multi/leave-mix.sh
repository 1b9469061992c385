#!/usr/bin/env bash
# tests/multi/leave-mix.sh - one JOB_LEAVE carries a node's leaves of a
# window, each rank with the reason its node gave it when it left; the
# receiver names the right culprit (docs/protocol-wire.md, JOB_LEAVE).
#
# wire-inject plays node 1 (node id 0, the root of the job's epoch tree)
# with ranks 1 and 2 of job lmix (world 3); rank 0 runs on node 2 and
# enters an epoch.  Once node 2 counted it (EPOCH_UP), the fake node sends
# one JOB_LEAVE: rank 1 with -ESRCH (it left after another rank had), rank
# 2 with 0 (it left first: the culprit).  Entries are sorted by rank, so
# rank 1's comes first; node 2 takes them in the order they can only have
# left in (reason 0, then -ESRCH, then -EHOSTDOWN), so rank 0's epoch fails
# with -ESRCH naming rank 2, not rank 1.
T=multi-leave-mix
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 2 --external 1
"$WIRE_INJECT" --me 0 --nodes 2 --bind "$SHF_NODES_ADDR_1" --key "$SHF_NODES_KEY" \
  --peer "1=$SHF_NODES_ADDR_2" leavemix lmix 1 >"$NODES_TMP/logs/inject.log" 2>&1 &
inj=$!
SHF_JOB=lmix SHF_WORLD=3 SHF_RANK=0 nodes_client 2 rank0 "$MNCLIENT" leavemix expect=ESRCH \
  timeout=20000
ok=1
nodes_wait_all || ok=0
wait $inj || ok=0
cat "$NODES_TMP/logs/inject.log" "$NODES_TMP/logs/rank0.log"
[ $ok = 1 ] || t_fail "the run failed (logs above)"
line=$(grep "rank 0: epoch:" "$NODES_TMP/logs/rank0.log")
[[ "$line" == *"rank 2 of job lmix left the job"* ]] ||
  t_fail "rank 0's epoch does not name rank 2, the culprit: $line"
t_note "one JOB_LEAVE with rank 1 (-ESRCH) before rank 2 (0): $line"
t_daemons_alive
