#!/usr/bin/env bash
# tests/multi/fault-parked-drop.sh - a peer goes down while one of its
# batches is parked here, and the rank it was parked on then leaves
# (review-turn2 §5.1 a).
#
# 2 nodes running shuffled-fault; rank 0 on node 1 (daemon id 0), rank 1 on
# node 2 (id 1).  After phase A (exact counts) rank 1 stops reading and
# rank 0 sends more than rank 1's 16 KiB delivery ring holds: node 2 parks
# node 1's batch.  Armed, node 2's next batch to node 1 (rank 1's one
# message) fails synchronously (SHD_FAULT_SEND node=0,kind=batch) and node
# 2 takes node 1 down with the batch still parked.  Then rank 1 exits
# without reading or closing: the parked records have no destination any
# more.  At 994cc2f node 2 answers them with a DROP to the down peer
# (send_drop() has no PEER_UP check); the fabric refuses it at once
# (-EHOSTUNREACH, the node was removed) and post() frees the message in
# on_send_done() and then reads m->peer: heap-use-after-free, the daemon
# dies under ASan.  (The plain build reads the freed bytes unharmed, so
# this one fails only under ASan.)
# Checked: no daemon dies or reports memory misuse; node 2 shows node 1
# down, nothing parked for it, no client and no job left; rank 0's flush
# returns -EHOSTDOWN once node 1 sees node 2 down (1 <= dropped_down <=
# count: records in flight are reported as possible loss); the fault fired.
T=multi-fault-parked-drop
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
fault=$NODES_SYNC/fault
t_fault_setup "node=0,kind=batch,file=$fault"
t_up --mode loopback -n 2 --daemon-args "--max-msg 4K --peer-timeout-ms 2000 --heartbeat-ms 200"

export SHF_JOB=parkdrop SHF_WORLD=2
SHF_RANK=0 nodes_client 1 rank0 "$MNCLIENT" parkdrop m=200 count=200 size=1000 timeout=60000
SHF_RANK=1 nodes_client 2 rank1 "$MNCLIENT" parkdrop m=200 vring=16384 timeout=60000
nodes_sync_wait A.0 A.1 stopped.1 sent.0 || t_fault_fail "the ranks did not get into position"
parked() { [ "$(t_peer_field 2 0 parked)" = true ]; }
t_until 30000 "node 2 to park node 1's batch on rank 1's full ring" parked
t_note "node 2 parked node 1's batch ($(nodes_stat 2 .daemon.batches_parked) parked so far)"

: > "$fault"
nodes_sync_post armed
nodes_sync_wait sent.1 || t_fault_fail "rank 1 did not send its message"
t_until 20000 "node 2 to take node 1 down" t_peer_went_down 2 0
t_fault_fired 2
t_note "node 2 took node 1 down; its batch still parked there: $(t_peer_field 2 0 parked)"

nodes_sync_post exit.1
# Rank 1 leaving ends the job on node 2 only for a while: node 0 replays
# rank 0's join when the link comes back up, and if that lands after rank
# 1 left, node 2 knows the job again (for rank 0, still live) until rank 0
# leaves too.  So: rank 1 gone now, the job gone once rank 0 has left.
t_until 30000 "node 2 to let rank 1 go" t_no_clients 2
nodes_sync_wait flushed.0 || t_fault_fail "rank 0's flush did not return as expected"
nodes_sync_post end
ok=1
nodes_wait_all || ok=0
cat "$NODES_TMP"/logs/rank*.log
[ $ok = 1 ] || t_fail "a rank failed"
t_until 10000 "node 2 to end the job once rank 0 has left too" t_idle 2
t_fault_check_clean
[ "$(t_peer_field 2 0 parked)" = false ] ||
  t_fail "node 2 still shows a batch of the down node 1 parked after its rank left"
t_note "peer lost with a batch parked, then its rank left: ok"
