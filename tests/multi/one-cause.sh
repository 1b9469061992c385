#!/usr/bin/env bash
# tests/multi/one-cause.sh - one cause, one error on every rank of a job
# (issue 23, item 5).
#
# 3 nodes x 2 ranks of mn-client onecause; node 3 (daemon node id 2) is
# lost (kill -9 of its daemon) while the other ranks wait in an epoch.
# Node 1 finds the loss within its peer_timeout_ms (1000); node 2 runs with
# a long one (20000, --node-args), so it still sees node id 2 up when node
# 1's ranks, failed with -EHOSTDOWN, close and their JOB_LEAVEs reach it:
# the race in which a node hears of the loss from another node's leave
# before it sees the loss itself.  Checked: every surviving rank's epoch
# fails with the same error, -EHOSTDOWN, naming the same lost node (its id
# and name), and node 2 still saw node id 2 up when its ranks were told
# (else the race was not forced).  Before the fix, node 2's ranks got
# -ESRCH ("ranks 0,1 of job cause left the job").
T=multi-one-cause
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
N=3 K=2 W=6 V=3         # V: the victim, harness numbering (daemon node id 2)
t_up --mode loopback -n $N --daemon-args "--peer-timeout-ms 1000 --heartbeat-ms 200" \
  --node-args "2:--peer-timeout-ms 20000"
[ "$(nodes_json 2 config | jq -r '.config.peer_timeout_ms.value')" = 20000 ] ||
  t_fail "node 2 does not run with peer_timeout_ms 20000 (--node-args)"

export SHF_JOB=cause SHF_WORLD=$W
for r in $(seq 0 $((W - 1))); do
  SHF_RANK=$r nodes_client $((r / K + 1)) "rank$r" "$MNCLIENT" onecause per_node=$K \
    victim=$((V - 1)) timeout=30000
done
waiting=()
for r in $(seq 0 $((W - 1))); do
  [ $((r / K + 1)) = $V ] && waiting+=("victim.$r") || waiting+=("in-epoch.$r")
done
nodes_sync_wait "${waiting[@]}" || t_fail "the ranks did not get into position"
sleep 0.3    # let the epochs block
nodes kill --node $V --signal KILL || t_fail "cannot kill node $V's daemon"
t_kill=$(nodes_now_ms)
T_KILLED=$V
t_note "node $V's daemon killed"

# every survivor answers; node 2 must still see the victim up by then
survivors=()
for r in $(seq 0 $((W - 1))); do [ $((r / K + 1)) = $V ] || survivors+=("$r"); done
told() {
  local r
  for r in "${survivors[@]}"; do grep -q "^rank $r: epoch:" "$NODES_TMP/logs/rank$r.log" || return 1; done
}
t_until 15000 "every surviving rank's epoch to return" told
state=$(nodes_peer_state 2 $((V - 1)))
t_note "every survivor told $(( $(nodes_now_ms) - t_kill )) ms after the kill; node 2 sees node id $((V - 1)) $state"
[ "$state" = up ] || t_fail "node 2 already sees node id $((V - 1)) $state: the race (a leave heard before the loss) was not forced"
nodes_sync_post v-exit
nodes_wait_all || t_fail "a rank failed"

# the node's name as the daemons know it: its host in the rendezvous
host=$(nodes_var ADDR $V)
host=${host%:*}
lines=()
for r in "${survivors[@]}"; do
  lines+=("$(grep -h "^rank $r: epoch:" "$NODES_TMP/logs/rank$r.log")")
  t_note "node $((r / K + 1)): ${lines[-1]}"
done
for line in "${lines[@]}"; do
  r=${line#rank }
  r=${r%%:*}
  case "$line" in
    "rank $r: epoch: EHOSTDOWN "*) ;;
    *) t_fail "rank $r (node $((r / K + 1))): not EHOSTDOWN as on the other ranks: $line" ;;
  esac
  [[ "$line" == *"of job cause lost with node $((V - 1)) ($host), which is down"* ]] ||
    t_fail "rank $r (node $((r / K + 1))): the lost node (id $((V - 1)), $host) is not named: $line"
done
t_fault_check_clean   # the survivors are alive, no sanitizer report (ASan build)
t_note "one cause, one error: every surviving rank got EHOSTDOWN naming node $((V - 1)) ($host): ok"
