#!/usr/bin/env bash
# tests/multi/peer-loss.sh MODE HOW - losing a node.
#   MODE loopback|netns; HOW kill (kill -9 of the node's daemon) or link
#   (netns: `ip -n HOST link set eth0 down`).
#
# 4 nodes x 4 ranks of mn-client peerloss; node 3 (daemon node id 2) is the
# victim.  After an all-to-all phase, the victim's ranks stop consuming;
# rank 0 blocks in shf_flush(REMOTE) on records it sent to the victim, the
# other survivors block in an epoch.  Then the node is lost.  Checked:
#  - every surviving daemon shows the peer down (shufflectl peers --json)
#    within a bound (peer_timeout_ms 1000: 3 x timeout + 1 s, generous);
#  - the flush returns -EHOSTDOWN; the epochs in flight and those begun
#    after the loss fail with -EHOSTDOWN (MULTI_EPOCH_EXPECT=any accepts
#    -ESRCH too; the counts of each are printed);
#  - the survivors go on exchanging messages in the same job (exact counts,
#    order), and a new job on the surviving nodes runs with epochs;
#  - link: the cut-off daemon sees all its peers down too.
# Then the lost node comes back, as a new session of every pair, with no
# other daemon restarted (docs/protocol-wire.md, "Sessions"):
#  - kill (static rendezvous): its daemon is restarted with the same
#    arguments (scripts/nodes restart: a new incarnation);
#  - link: its link comes back up (the daemons never restarted);
# every node sees every other up again (time measured from the restart or
# the link coming back, from the daemons' own logs), and a job on all four
# nodes runs exactly (counts, order, epochs).
T="multi-$([ "$2" = kill ] && echo peer-kill || echo link-down)-$1"
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
mode=$1 how=$2
t_need "$TCLIENT"
t_need "$MNCLIENT"
N=4 K=4 W=16 V=3          # V: the victim, harness numbering (daemon node id 2)
timeout_ms=1000
bound_ms=$((3 * timeout_ms + 1000))
t_up --mode "$mode" -n $N --daemon-args "--peer-timeout-ms $timeout_ms --heartbeat-ms 200"

export SHF_JOB=loss SHF_WORLD=$W
for r in $(seq 0 $((W - 1))); do
  SHF_RANK=$r nodes_client $((r / K + 1)) "rank$r" "$MNCLIENT" peerloss per_node=$K \
    victim=$((V - 1)) m=300 c=300 vring=131072 burst=262144 timeout=40000 \
    inflight_epoch="${MULTI_EPOCH_EXPECT:-EHOSTDOWN}" post_epoch="${MULTI_EPOCH_EXPECT:-EHOSTDOWN}"
done
blocked=(s-flushing)
for r in $(seq 1 $((W - 1))); do
  [ $((r / K + 1)) = $V ] && blocked+=("victim.$r") || blocked+=("in-epoch.$r")
done
nodes_sync_wait "${blocked[@]}" || t_fail "the ranks did not get into position"
sleep 0.5    # let the flush and the epochs block

t_kill=$(nodes_now_ms)
case "$how" in
  kill) nodes kill --node $V --signal KILL || t_fail "cannot kill node $V's daemon" ;;
  link) nodes link --node $V down || t_fail "cannot take node $V's link down" ;;
esac
t_note "node $V lost ($how)"
# who sees whom down, and when (ms after the loss): WATCH "node:peer_id"...
watch=()
for i in $(seq 1 $N); do [ $i = $V ] || watch+=("$i:$((V - 1))"); done
[ "$how" = link ] && for p in $(seq 0 $((N - 1))); do [ $p = $((V - 1)) ] || watch+=("$V:$p"); done
declare -A seen=()
while [ ${#seen[@]} -lt ${#watch[@]} ]; do
  now=$(nodes_now_ms)
  for w in "${watch[@]}"; do
    [ -n "${seen[$w]-}" ] && continue
    [ "$(nodes_peer_state "${w%:*}" "${w#*:}")" = down ] && seen[$w]=$((now - t_kill))
  done
  if [ $((now - t_kill)) -gt $bound_ms ]; then
    for w in "${watch[@]}"; do
      [ -n "${seen[$w]-}" ] || t_fail "node ${w%:*} still sees node id ${w#*:} up $bound_ms ms after the loss"
    done
  fi
  sleep 0.02
done
for w in "${watch[@]}"; do
  t_note "node ${w%:*} sees node id ${w#*:} down ${seen[$w]} ms after the loss (peer_timeout_ms $timeout_ms, bound $bound_ms)"
done

# the survivors finish phase C; then the victims may go
survivors=()
for r in $(seq 0 $((W - 1))); do [ $((r / K + 1)) = $V ] || survivors+=("C.$r"); done
NODES_SYNC_TIMEOUT_MS=60000 nodes_sync_wait "${survivors[@]}" || t_fail "the survivors did not finish"
nodes_sync_post v-exit
nodes_wait_all || t_fail "a rank failed"
logs=$(cat "$NODES_TMP"/logs/rank*.log)
grep -h "flush(REMOTE) with" <<< "$logs"
summary() { sort | uniq -c | awk '{ printf "%s%d x %s", (NR > 1 ? ", " : ""), $1, $2 }'; }
t_note "epochs in flight at the loss: $(sed -n 's/.*was lost: \([A-Za-z]*\) after.*/\1/p' <<< "$logs" | summary)"
t_note "epochs begun after the loss: $(sed -n 's/.*after the loss: \([A-Za-z]*\) .*/\1/p' <<< "$logs" | summary)"
t_note "for example: $(grep -m1 -h "epoch begun after the loss" <<< "$logs")"
t_note "node 1: clients_total.drops_down $(nodes_stat 1 .clients_total.drops_down), peer drops_down $(nodes_json 1 peers | jq ".peers[] | select(.node == $((V - 1))) | .drops_down")"

# a new job on the surviving nodes
export SHF_JOB=after SHF_WORLD=12
r=0
for i in $(seq 1 $N); do
  [ $i = $V ] && continue
  for _ in $(seq 1 $K); do
    SHF_RANK=$r nodes_client "$i" "after$r" "$TCLIENT" traffic n=800 rounds=2 hold=release
    r=$((r + 1))
  done
done
t_release_held $(seq 0 11)
nodes_wait_all || t_fail "a new job on the surviving nodes failed"
for i in $(seq 1 $N); do
  [ $i = $V ] && continue
  # ping, not status: status exits 4 (degraded) with node $V down
  "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET "$i")" ping >/dev/null || t_fail "node $i died"
done
t_note "survivors carried on: same job (exact counts) and a new job (2 epochs): ok"

# ------------------------------------------------------------------ rejoin
if [ "$how" = kill ] && [ "${SHF_NODES_RDV:-static}" = mpi ]; then
  t_note "rejoin not tried: an mpirun-launched daemon cannot be restarted alone"
  exit 0
fi
pids=""
for i in $(seq 1 $N); do [ $i = $V ] || pids+="$(nodes_var PID "$i") "; done
t_back=$(date +%s.%N)
case "$how" in
  kill)
    nodes_restart $V || t_fail "cannot restart node $V"
    # from the moment the new daemon is ready (its own log)
    line=$(grep -h "NOTICE: shuffled .* started" "$(nodes_var LOG "$V")" | tail -n 1)
    t_back=$(date -d "${line%% *}" +%s.%N) || t_fail "no start line in node $V's log" ;;
  link)
    # the issue's flap: at least 3 s down
    while [ $(( $(nodes_now_ms) - t_kill )) -lt 3000 ]; do sleep 0.05; done
    t_note "node $V's link was down for $(( $(nodes_now_ms) - t_kill )) ms, under traffic"
    nodes link --node $V up || t_fail "cannot bring node $V's link up" ;;
esac
all_up() {
  local i p
  for i in $(seq 1 $N); do
    for p in $(seq 0 $((N - 1))); do
      [ $p = $((i - 1)) ] && continue
      [ "$(nodes_peer_state "$i" $p)" = up ] || return 1
    done
  done
}
t_until 30000 "every node to see every other up again" all_up
# when each survivor logged the victim up again (its last "up" line)
for i in $(seq 1 $N); do
  [ $i = $V ] && continue
  line=$(grep -h "peer node $((V - 1)) (.*) up" "$(nodes_var LOG "$i")" | tail -n 1)
  ts=$(date -d "${line%% *}" +%s.%N 2>/dev/null) || continue
  t_note "node $i sees node id $((V - 1)) up again $(awk -v a="$ts" -v b="$t_back" 'BEGIN { printf "%.0f", (a - b) * 1000 }') ms after the $([ "$how" = kill ] && echo restart || echo link came back)"
  s=$(t_peer_field "$i" $((V - 1)) sessions)
  [ "$s" -ge 2 ] || t_fail "node $i: $s session(s) with node id $((V - 1)), expected a new one"
done
now=""
for i in $(seq 1 $N); do [ $i = $V ] || now+="$(nodes_var PID "$i") "; done
[ "$now" = "$pids" ] || t_fail "a surviving daemon restarted ($pids-> $now)"
rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release
export SHF_JOB=rejoined SHF_WORLD=$W
for r in $(seq 0 $((W - 1))); do
  SHF_RANK=$r nodes_client $((r / K + 1)) "rejoined$r" "$TCLIENT" traffic n=800 rounds=2 hold=release
done
t_release_held $(seq 0 $((W - 1)))
nodes_wait_all || t_fail "a job on all $N nodes after the rejoin failed"
t_note "node $V rejoined; a job on all $N nodes ran exactly (2 epochs); no survivor restarted: ok"

