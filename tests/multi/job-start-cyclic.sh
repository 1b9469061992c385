#!/usr/bin/env bash
# tests/multi/job-start-cyclic.sh - a job whose ranks are dealt round-robin
# over its nodes (Slurm's --distribution=cyclic, `mpirun --map-by node`)
# starts with one map entry (wire version 9, docs/protocol-wire.md,
# "JOB_MAP") and runs exactly (issue 25, item 2).
#
# 4 loopback nodes; a job of world 6 on nodes 2, 3 and 4 (ids 1..3, k = 3):
# rank r on node 2 + r % 3, 2 ranks each, not consecutive.  (2 ranks per
# node, so that the joins cannot exceed 2k however slowly the ranks come:
# one join per node per 10 ms window in which some of its ranks registered.)
# Checked:
#   - the job is exact (tclient traffic: counts, order, epochs): every
#     node took the other nodes' ranks from the map it received;
#   - the home logged its map as 1 entry on the wire (6 blocks of one rank
#     in 2 rounds over 3 consecutive nodes; version 8 sent 2, one per
#     round, and this test fails with 2);
#   - the job start messages (join_msgs_out, all daemons) are at most 3k;
#   - its end (leave_msgs_out/_in, all daemons; every JOB_LEAVE sent
#     arrives, and the job ends on each of its nodes): each node's last
#     window of leaves goes to the home only, which forwards them to the
#     job's nodes: 2(k - 1) = 4 when the nodes end together (the home is
#     one of them); at most 3k = 9.  One JOB_LEAVE per rank to every
#     node (r·k·(k - 1) = 12) fails it.
T=multi-job-start-cyclic
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=4 K=2 k=3
JOB_NODES=(2 3 4)
t_up --mode loopback -n $N
t_all_up 20000 || t_fail "the nodes never saw each other up"

outs() { # I: "join_msgs_out join_msgs_in leave_msgs_out leave_msgs_in"
  nodes_json "$1" stats |
    jq -r '.daemon | "\(.join_msgs_out) \(.join_msgs_in) \(.leave_msgs_out) \(.leave_msgs_in)"'
}
for i in $(seq 1 $N); do before[$i]=$(outs "$i"); done
name=cyc W=$((k * K))
export SHF_JOB=$name SHF_WORLD=$W
for r in $(seq 0 $((W - 1))); do
  SHF_RANK=$r nodes_client "${JOB_NODES[$((r % k))]}" "$name$r" "$TCLIENT" traffic n=200 rounds=2 \
    seed=7 timeout=30000
done
nodes_wait_all || t_fail "job $name failed (logs above)"
# the leaves of the last ranks are sent as they detach: wait until every
# one sent has arrived
leaves() { # "sent received" by all daemons since the start
  local i o0 n0 l0 m0 o1 n1 l1 m1 lo=0 li=0
  for i in $(seq 1 $N); do
    read -r o0 n0 l0 m0 <<<"${before[$i]}"
    read -r o1 n1 l1 m1 <<<"$(outs "$i")"
    lo=$((lo + l1 - l0)) li=$((li + m1 - m0))
  done
  echo "$lo $li"
}
leaves_in() { read -r lo li <<<"$(leaves)"; [ "$lo" = "$li" ] && [ "$lo" -gt 0 ]; }
t_until 10000 "every JOB_LEAVE sent to arrive ($(leaves))" leaves_in
# and the job ended on each of its nodes (it hears every rank's leave)
ended_all() {
  local i
  for i in "${JOB_NODES[@]}"; do
    grep -q "job $name ended" "$(nodes_var LOG "$i")" || return 1
  done
}
t_until 10000 "job $name to end on each of its nodes" ended_all
t_until 10000 "every JOB_LEAVE sent to arrive ($(leaves))" leaves_in
read -r lo li <<<"$(leaves)"
[ "$lo" -le $((3 * k)) ] ||
  t_fail "job $name: $lo JOB_LEAVEs at its end, more than 3k = $((3 * k)) (through the home: 2(k - 1) = $((2 * (k - 1))); one per rank to every node: r·k·(k - 1) = $((K * k * (k - 1))))"
sum=0 per="" home=""
for i in $(seq 1 $N); do
  read -r o0 n0 _ <<<"${before[$i]}"
  read -r o1 n1 _ <<<"$(outs "$i")"
  sum=$((sum + o1 - o0))
  per+="node $i: out $((o1 - o0)) in $((n1 - n0)); "
  grep -q "job $name: home of the job" "$(nodes_var LOG "$i")" && home=$i
done
[ -n "$home" ] || t_fail "no node logged that it confirmed job $name as its home"
line=$(grep "job $name: home of the job" "$(nodes_var LOG "$home")" | tail -n 1)
[[ "$line" == *"its map 1 entry on the wire"* ]] ||
  t_fail "job $name dealt round-robin over 3 consecutive nodes: the home's map is not one entry: $line"
[ "$sum" -ge 1 ] || t_fail "job $name: no job start message counted at all"
[ "$sum" -le $((3 * k)) ] ||
  t_fail "job $name: $sum job start messages on $k nodes (${per% }), more than 3k = $((3 * k))"
t_note "job $name (world $W dealt round-robin over nodes ${JOB_NODES[*]}, home node $home): exact; map 1 entry on the wire; $sum job start messages in all (${per%; }; bound 3k = $((3 * k))); its end: $lo JOB_LEAVEs sent, $li received (bound 3k = $((3 * k)); one per rank to every node would be r·k·(k - 1) = $((K * k * (k - 1))))"
t_daemons_alive
