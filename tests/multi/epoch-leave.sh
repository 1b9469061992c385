#!/usr/bin/env bash
# tests/multi/epoch-leave.sh - a rank that leaves right after its epoch
# completed must not fail that epoch on nodes that are still finishing it.
#
# A job's last epoch followed by shf_close() is how jobs end.  Epochs go
# over a tree of the job's nodes (daemon/epoch.c): node B may complete the
# epoch (the root's DRAINED completion, EPOCH_DOWN, reached it) while node
# A still waits for its own copy; B's rank then leaves and its JOB_LEAVE
# can reach A first.  Every node made its contribution to the epoch before
# anyone left, so A's ranks must see the epoch succeed.  wire-inject plays
# node C (rank 2, node id 0: the tree's root, A and B its children) and
# makes that order certain: the completion to B only, wait for B's LEAVE,
# then to A.  ORDER=benign (first argument): the control run, A's
# completion reaches it before B's rank can leave; it shows that the test
# itself is sound.
T=multi-epoch-leave${1:+-$1}
order=${1:-race}
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 3 --external 1
"$WIRE_INJECT" --me 0 --nodes 3 --bind "$SHF_NODES_ADDR_1" --key "$SHF_NODES_KEY" --peer "1=$SHF_NODES_ADDR_2" \
  --peer "2=$SHF_NODES_ADDR_3" --gap-ms 300 --order "$order" epochleave eleave 1 2 \
  >"$NODES_TMP/logs/inject.log" 2>&1 &
inj=$!
export SHF_JOB=eleave SHF_WORLD=3
SHF_RANK=0 nodes_client 2 rank0 "$MNCLIENT" epochleave timeout=20000
SHF_RANK=1 nodes_client 3 rank1 "$MNCLIENT" epochleave timeout=20000
ok=1
nodes_wait_all || ok=0
cat "$NODES_TMP"/logs/rank*.log
wait $inj || { ok=0; }
cat "$NODES_TMP/logs/inject.log"
[ $ok = 1 ] || t_fail "rank 0's epoch failed although every node had contributed before rank 1 left"
t_note "epoch then leave: ok"
