#!/usr/bin/env bash
# tests/multi/stagger.sh - daemons started 2 s apart still converge.
# Static rendezvous: node 1's daemon starts, its ranks register (their
# JOB_JOIN to node 2 cannot be delivered yet: nobody listens there), then
# 2 s later node 2's daemon and ranks; the job must form and its traffic
# complete (tclient: exactly once, order, epochs).
T=multi-stagger
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
t_up --mode loopback -n 2 --defer 2
export SHF_JOB=stagger SHF_WORLD=4
args=(traffic n=2000 rounds=3 maxlen=1000 hold=release timeout=40000)
for r in 0 1; do SHF_RANK=$r nodes_client 1 "rank$r" "$TCLIENT" "${args[@]}"; done
sleep 2
# never heard from: "unknown", neither up nor a failure
st=$(nodes_peer_state 1 1)
[ "$st" = unknown ] || t_fail "node 1 sees node 2 as '$st' before it started, not 'unknown'"
nodes start --node 2 || t_fail "cannot start node 2"
t_note "node 2 started 2 s after node 1"
for r in 2 3; do SHF_RANK=$r nodes_client 2 "rank$r" "$TCLIENT" "${args[@]}"; done
t_release_held 0 1 2 3
nodes_wait_all || t_fail "a rank failed"
for i in 1 2; do
  [ "$(nodes_peer_state $i $((2 - i)))" = up ] || t_fail "node $i sees its peer down"
done
t_note "converged: 4 ranks, 3 epochs: ok"
