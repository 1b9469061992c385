#!/usr/bin/env bash
# tests/multi/fault-append-down.sh - the peer goes down inside
# shd_net_append(), while a record is being appended to it (review-turn2
# §5.1 b): every record lost must be reported to the sender's flush.
#
# 2 nodes running shuffled-fault, rank 0 on node 1 (daemon id 0) sends to
# rank 1 on node 2 (id 1).  Phase A: 100 messages, flush, exact counts.
# Armed (SHD_FAULT_SEND node=1,kind=batch), rank 0 sends `count` records of
# 1000 bytes (1016 on the wire).  linger_us is 1 s and max_msg 4 KiB, so
# the batch is closed by record 33 not fitting (32 x 1016 < 32 KiB
# batch_bytes < 33 x 1016): shd_net_append -> close_open -> try_send ->
# post fails synchronously -> peer_down.  Nothing after phase A reaches node
# 2, so the flush must return -EHOSTDOWN with dropped_down == count exactly
# (sent == delivered + reported drops), and rank 1 must have exactly phase
# A.  At 994cc2f: record 33 goes into a new batch on the DOWN peer (counted
# as sent, never sent, never reported), and the 32 records of the batch
# whose post failed are never reported either (on_send_done() returns it
# to the pool uncounted): dropped_down is count - 33.  A count mismatch,
# in the plain and the ASan build alike.
T=multi-fault-append-down
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
fault=$NODES_SYNC/fault
count=100
t_fault_setup "node=1,kind=batch,file=$fault"
t_up --mode loopback -n 2 --daemon-args "--max-msg 4K --batch-bytes 32K --linger-us 1000000 --peer-timeout-ms 2000 --heartbeat-ms 200"

export SHF_JOB=appenddown SHF_WORLD=2
SHF_RANK=0 nodes_client 1 rank0 "$MNCLIENT" appenddown m=100 count=$count size=1000 timeout=60000
SHF_RANK=1 nodes_client 2 rank1 "$MNCLIENT" appenddown m=100 timeout=60000
nodes_sync_wait A.0 A.1 || t_fault_fail "phase A did not complete"
: > "$fault"
nodes_sync_post armed
nodes_sync_wait B.0 || t_fault_fail "rank 0 did not get through its flush"
ok=1
nodes_wait_all || ok=0
cat "$NODES_TMP"/logs/rank*.log
peer=$(nodes_json 1 peers 2>/dev/null | jq -c '.peers[] | select(.node == 1) |
  {state, msgs_out, drops_down, queued, open_bytes}')
client=$(nodes_stat 1 '.clients_total | {msgs_remote, drops_down}' 2>/dev/null | jq -c .)
t_note "node 1: peer node 2 $peer; clients_total $client"
t_fault_fired 1
t_fault_check_clean
t_until 20000 "node 1 to show node 2 down after the failed send" t_peer_went_down 1 1
[ $ok = 1 ] || t_fail "records lost without a report, or wrong counts (see the rank logs above)"
t_note "peer down during an append: every lost record reported: ok"
