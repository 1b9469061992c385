#!/usr/bin/env bash
# tests/multi/withdraw-map.sh - a node that moves its ranks to a new home
# withdraws them from the old one; when the old home is a node of the job
# that took the map already, the ranks must stay live there
# (docs/protocol-wire.md, JOB_LEAVE `WITHDRAW`).
#
# 3 loopback nodes; wire-inject plays node 1 (id 0).  Job wd2 (world 3:
# rank 0 on node 2, rank 1 on node 3, rank 2 on node 1): the rendezvous hash
# makes node 1 its home once up, node 2 before.  Nodes 2 and 3 announce to
# node 2.  Then wire-inject opens a session with node 2 only: node 2 moves
# its ranks to it and gets the FINAL map, and rank 0 runs.  Then a session
# with node 3: node 3 moves its rank 1 to node 1 and withdraws it from node
# 2, its old home, which holds the map; then node 3 gets the map.  Rank 1
# never left: node 2 must not count it gone (version 8's leave of all a
# node's ranks, which served as the withdrawal, made node 2 take rank 1 as
# gone, and its next epoch failed with -ESRCH).
T=multi-withdraw-map
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 3 --external 1 --daemon-args "--heartbeat-ms 200"
both_up() { t_peer_is 2 2 up && t_peer_is 3 1 up; }
t_until 20000 "nodes 2 and 3 to see each other up" both_up
stat2() { nodes_stat 2 ".daemon.$1" 2>/dev/null || echo 0; }
export SHF_JOB=wd2 SHF_WORLD=3
SHF_RANK=0 nodes_client 2 wd.0 "$TCLIENT" open post=opened hold=release timeout=30000
SHF_RANK=1 nodes_client 3 wd.1 "$TCLIENT" open post=opened hold=release timeout=30000
node2_home() { [ "$(stat2 home_jobs)" = 1 ] && [ "$(stat2 join_msgs_in)" -ge 1 ]; }
t_until 10000 "node 2, the job's home for now, to hold node 3's join" node2_home
"$WIRE_INJECT" --me 0 --nodes 3 --bind "$SHF_NODES_ADDR_1" --key "$SHF_NODES_KEY" \
  --peer "1=$SHF_NODES_ADDR_2" --peer "2=$SHF_NODES_ADDR_3" withdrawmap wd2 1 2 \
  >"$NODES_TMP/logs/inject.log" 2>&1 &
inj=$!
stop() { nodes_sync_post release; nodes_sync_post inject-exit; }
nodes_sync_wait mapped || { stop; cat "$NODES_TMP/logs/inject.log"; t_fail "wire-inject did not get that far"; }
withdrawn() { [ "$(stat2 leave_msgs_in)" -ge 1 ]; }
t_until 10000 "node 3's withdrawal to reach node 2" withdrawn
nodes_sync_wait opened.0 opened.1 || { stop; t_fail "the ranks did not both run"; }
gone=$(nodes_json 2 jobs | jq -r '.jobs[] | select(.name == "wd2") | .gone')
stop
wait $inj || { cat "$NODES_TMP/logs/inject.log"; t_fail "wire-inject failed"; }
nodes_wait_all || t_fail "a rank failed (logs above)"
[ "$gone" = 0 ] ||
  t_fail "node 2 counts $gone rank(s) of wd2 gone after node 3 withdrew rank 1 from it (rank 1 never left)"
t_note "node 3 withdrew its rank from node 2, its old home, which had the map: node 2 counts no rank gone"
t_daemons_alive
