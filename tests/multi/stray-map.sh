#!/usr/bin/env bash
# tests/multi/stray-map.sh - a job's final map that reaches a node whose
# ranks of the job all left before it came (daemon/jobhome.c,
# left_before_map): the node tells each other node of the map once that
# its ranks left (JOB_LEAVE rank -1), however many blocks the map names
# there.  wire-inject plays node id 0, the job's map sender: 30 ranks dealt
# round-robin over the 3 nodes, one compacted entry that the receiver
# expands into 30 blocks, 10 on each node.  Before the fix the node sent
# a leave per block: 20 to the two other nodes, and one more to the sender.
T=multi-stray-map
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 3 --external 1
"$WIRE_INJECT" --me 0 --nodes 3 --bind "$SHF_NODES_ADDR_1" --key "$SHF_NODES_KEY" \
  --peer "1=$SHF_NODES_ADDR_2" --peer "2=$SHF_NODES_ADDR_3" straymap 1 smap 30 \
  >"$NODES_TMP/logs/inject.log" 2>&1 || { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "wire-inject failed"; }
cat "$NODES_TMP/logs/inject.log"
got=$(sed -n 's/^straymap: \([0-9]*\) leave.*/\1/p' "$NODES_TMP/logs/inject.log")
out=$(nodes_json 2 stats | jq -r '.daemon.leave_msgs_out')
in3=$(nodes_json 3 stats | jq -r '.daemon.leave_msgs_in')
t_note "the node sent $out leave(s): $got to the map's sender, $in3 to the third node"
[ "$got" = 1 ] || t_fail "the map's sender got $got leaves of the job, expected 1"
[ "$out" = 2 ] || t_fail "the node sent $out leaves, expected 2 (one to each other node of the map)"
[ "$in3" = 1 ] || t_fail "the third node got $in3 leaves, expected 1"
t_daemons_alive
if t_sanitizer_reports; then t_fail "a daemon reported memory misuse (above)"; fi
t_note "ok"
