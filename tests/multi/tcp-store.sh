#!/usr/bin/env bash
# tests/multi/tcp-store.sh - the tcp://HOST:PORT rendezvous: daemons meet
# through a key-value store (PyTorch TCPStore protocol) served by a
# separate `shuffled --rendezvous none --store-listen` (scripts/nodes
# --rdv tcp starts it).
#
# 3 loopback nodes, node 3's daemon deferred:
#  1. nodes 1-2 show node id 2 unknown (or do not list it) after several
#     peer timeouts, and a job on nodes 1-2 runs exactly (tclient traffic);
#  2. node 3 starts (learned by the others when it first contacts them):
#     every node sees every other up; a job on all 3 runs exactly;
#  3. node 2 restarted (kill -9, same command line): up again everywhere,
#     same node id (1), a new pid; a job on all 3 runs exactly;
#  4. the store daemon is killed (-9) while a job on all 3 runs: the job
#     completes exactly and no daemon restarted;
#  5. with the store still down, node 3 restarted: it must not come up
#     (its rendezvous waits for the store) and its log or stderr must say
#     so; if the daemon has a rendezvous timeout option, a daemon started
#     with a short one must fail after it with a message naming the store;
#     then the store starts again and node 3 comes up as node id 2 and a
#     job on all 3 runs exactly.
# Times are printed (t_note) for each step.
T=multi-tcp-store
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=3 K=2
t_up --mode loopback -n $N --rdv tcp --defer 3 \
  --daemon-args "--peer-timeout-ms 1000 --heartbeat-ms 200"
[ -n "${SHF_NODES_STORE_PID-}" ] || t_fail "scripts/nodes --rdv tcp recorded no store pid"
t_note "store daemon pid $SHF_NODES_STORE_PID on $SHF_NODES_STORE_ADDR"

# t_until checks every node's daemon: node 3 is not there yet
wait_for() {  # wait_for MS WHAT CMD...
  local ms=$1 what=$2 end
  shift 2
  end=$(( $(nodes_now_ms) + ms ))
  until "$@"; do
    [ "$(nodes_now_ms)" -lt "$end" ] || t_fault_fail "timed out ($ms ms) waiting for: $what"
    sleep 0.05
  done
}
node_id() { nodes_json "$1" status 2>/dev/null | jq -r '.node_id'; }
all_up() {  # all_up NODES...: each of them sees each other up
  local i p
  for i in "$@"; do
    for p in "$@"; do
      [ "$p" = "$i" ] && continue
      [ "$(nodes_peer_state "$i" $((p - 1)))" = up ] || return 1
    done
  done
}

# run_job NAME NODES...: K ranks on each node, tclient traffic, exact
# counts, order and epochs (tclient checks them); the ranks hold until all
# finished.  With JOB_HOOK set, it runs once every rank has opened.
run_job() {
  local job=$1 i k r=0 t0 sent=0 got=0 a b
  shift
  local w=$(( $# * K ))
  rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release "$NODES_SYNC"/open.*
  t0=$(nodes_now_ms)
  for i in "$@"; do
    for k in $(seq 1 $K); do
      SHF_JOB=$job SHF_WORLD=$w SHF_RANK=$r nodes_client "$i" "$job$r" "$TCLIENT" \
        traffic n=${JOB_N:-1000} rounds=${JOB_ROUNDS:-2} maxlen=400 post=open \
        hold=release timeout=40000
      r=$((r + 1))
    done
  done
  if [ -n "${JOB_HOOK-}" ]; then
    for r in $(seq 0 $((w - 1))); do
      nodes_sync_wait "open.$r" || t_fault_fail "job $job: rank $r never opened"
    done
    $JOB_HOOK
  fi
  t_release_held $(seq 0 $((w - 1)))
  nodes_wait_all || t_fault_fail "job $job failed"
  for r in $(seq 0 $((w - 1))); do
    read -r a b < <(sed -n 's/^rank [0-9]*: sent \([0-9]*\) delivered \([0-9]*\).*/\1 \2/p' \
      "$NODES_TMP/logs/$job$r.log")
    sent=$((sent + ${a:-0})) got=$((got + ${b:-0}))
  done
  [ "$sent" = "$got" ] && [ "$sent" -gt 0 ] || t_fail "job $job: $sent sent, $got delivered"
  JOB_MS=$(( $(nodes_now_ms) - t0 )) JOB_MSGS=$sent
}

# ---------------------------------------------------------------- 1. two nodes
t0=$(nodes_now_ms)
wait_for 20000 "nodes 1 and 2 to see each other up" all_up 1 2
t_note "nodes 1-2 see each other up $(( $(nodes_now_ms) - t0 )) ms after up"
sleep 2.5  # several peer timeouts: node 3 (never started) is not a failure
for i in 1 2; do
  st=$(nodes_peer_state "$i" 2)
  case "$st" in
    ""|unknown) ;;
    *) t_fail "node $i sees node id 2 (never started) as '$st', not 'unknown' or absent" ;;
  esac
  t_note "node $i sees node id 2 as '${st:-absent}'"
done
for i in 1 2; do
  [ "$(node_id $i)" = $((i - 1)) ] || t_fail "node $i is node id $(node_id $i), expected $((i - 1))"
done
run_job two 1 2
t_note "job on nodes 1-2 while node 3 is not started: exact ($JOB_MSGS msgs, $JOB_MS ms): ok"

# ---------------------------------------------------------------- 2. node 3 arrives
t0=$(nodes_now_ms)
nodes start --node 3 || t_fail "cannot start node 3"
. "$NODES_DIR/env"
t1=$(nodes_now_ms)
t_until 20000 "every node to see every other up" all_up 1 2 3
t_note "node 3 started: ready after $((t1 - t0)) ms; every node sees every other up $(( $(nodes_now_ms) - t0 )) ms after its start"
[ "$(node_id 3)" = 2 ] || t_fail "node 3 is node id $(node_id 3), expected 2"
run_job three 1 2 3
t_note "job on all 3 nodes after node 3 arrived: exact ($JOB_MSGS msgs, $JOB_MS ms): ok"

# ---------------------------------------------------------------- 3. node 2 restarted
old=$(nodes_var PID 2)
s1=$(t_peer_field 1 1 sessions)
t0=$(nodes_now_ms)
nodes_restart 2 || t_fail "cannot restart node 2"
t1=$(nodes_now_ms)
[ "$(nodes_var PID 2)" != "$old" ] || t_fail "node 2 has the same pid after its restart"
[ "$(node_id 2)" = 1 ] || t_fail "node 2 came back as node id $(node_id 2), expected 1 (same name)"
s_up() { all_up 1 2 3 && [ "$(t_peer_field 1 1 sessions)" -gt "$s1" ]; }
t_until 20000 "every node to see node 2 up again (a new session)" s_up
t_note "node 2 restarted (pid $old -> $(nodes_var PID 2)), node id 1 again: ready after $((t1 - t0)) ms, up everywhere $(( $(nodes_now_ms) - t0 )) ms after the kill"
run_job restarted 1 2 3
t_note "job on all 3 nodes after node 2's restart: exact ($JOB_MSGS msgs, $JOB_MS ms): ok"

# ---------------------------------------------------------------- 4. the store dies mid-job
pids="$(nodes_var PID 1) $(nodes_var PID 2) $(nodes_var PID 3)"
kill_store() {
  local p=$SHF_NODES_STORE_PID
  nodes_store_kill || t_fail "cannot kill the store daemon"
  kill -0 "$p" 2>/dev/null && t_fail "the store daemon (pid $p) is still there"
  t_note "store daemon (pid $p) killed (-9) with every rank of job 'nostore' open"
}
JOB_HOOK=kill_store JOB_N=3000 JOB_ROUNDS=4 run_job nostore 1 2 3
unset JOB_HOOK
t_daemons_alive
now="$(nodes_var PID 1) $(nodes_var PID 2) $(nodes_var PID 3)"
[ "$now" = "$pids" ] || t_fail "a daemon restarted while the store was down ($pids -> $now)"
t_note "job on all 3 nodes with the store killed under it: exact ($JOB_MSGS msgs, $JOB_MS ms), no daemon restarted: ok"
run_job stillnostore 1 2 3
t_note "a new job on all 3 nodes with the store down: exact ($JOB_MSGS msgs, $JOB_MS ms): ok"

# ---------------------------------------------------------------- 5. a restart without the store
nodes kill --node 3 --signal KILL || t_fail "cannot kill node 3"
wait_for 5000 "node 3's daemon to die" eval '! kill -0 "$(nodes_var PID 3)" 2>/dev/null'
# a short rendezvous timeout, when the daemon has one: it must give up
# with a message that names the store
opt=$("$SHF_NODES_SHUFFLED" --help 2>&1 | grep -o -E -- '--(rendezvous|rdv)_timeout[a-z_]*' | head -n1)
if [ -n "$opt" ]; then
  probe=$NODES_TMP/probe
  mkdir -p "$probe"
  t0=$(nodes_now_ms)
  timeout 30 "$SHF_NODES_SHUFFLED" --runtime-dir "$probe" --node-name n3 \
    --log-file "$probe/log" --rendezvous "tcp://$SHF_NODES_STORE_ADDR" \
    --bind "$(nodes_var ADDR 3)" "$opt=2000" >"$probe/out" 2>&1
  rc=$? dt=$(( $(nodes_now_ms) - t0 ))
  msg=$(cat "$probe/out" "$probe/log" 2>/dev/null | grep -i -m1 'store\|rendezvous')
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || t_fail "a daemon with $opt=2000 and no store: exit $rc after $dt ms"
  [ "$dt" -ge 1800 ] || t_fail "a daemon with $opt=2000 gave up after $dt ms, before its timeout"
  grep -qi 'store' <<< "$msg" || t_fail "a daemon with $opt=2000 failed ($rc) without naming the store: $(tail -n 3 "$probe/out")"
  t_note "no store, $opt=2000: exit $rc after $dt ms: $msg"
else
  t_note "shuffled has no rendezvous timeout option: the give-up path is not tried"
fi

restart_start=$(nodes_now_ms)
"$NODES_SCRIPT" restart --dir "$NODES_DIR" --node 3 --quiet --timeout 90 \
  >"$NODES_TMP/logs/restart3.log" 2>&1 &
NODES_PIDS+=("$!")
NODES_NAMES+=(restart3)
# the daemon says why it waits every few seconds: poll its log and
# stderr for up to 12 s, node 3 must not come up meanwhile
old=$(nodes_var PID 3)
wait_for 5000 "node 3's new daemon to start" eval \
  '. "$NODES_DIR/env"; [ "$(nodes_var PID 3)" != "$old" ]'
new=$(nodes_var PID 3) line=""
end=$(( restart_start + 12000 ))
while [ "$(nodes_now_ms)" -lt "$end" ]; do
  nodes_reap
  [ -z "${NODES_STATUS[${NODES_PIDS[0]}]-}" ] ||
    t_fail "restarting node 3 without the store ended after $(( $(nodes_now_ms) - restart_start )) ms (status ${NODES_STATUS[${NODES_PIDS[0]}]}): $(cat "$NODES_TMP/logs/restart3.log")"
  kill -0 "$new" 2>/dev/null || t_fail "node 3's new daemon exited with the store down: $(tail -n 5 "$(t_daemon_out 3)")"
  "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 3)" ping >/dev/null 2>&1 &&
    t_fail "node 3 answers without the store (its rendezvous did not wait)"
  line=$(cat "$(nodes_var LOG 3)" "$(t_daemon_out 3)" 2>/dev/null | grep -F "[$new]" |
         grep -i 'store' | grep -i -m1 'wait\|retry')
  [ -n "$line" ] && break
  sleep 0.2
done
[ -n "$line" ] || t_fail "node 3 (pid $new) waited 12 s for the store without saying so: log: $(grep -F "[$new]" "$(nodes_var LOG 3)" | tail -n 3) / stderr: $(tail -n 3 "$(t_daemon_out 3)")"
waited=$(( $(nodes_now_ms) - restart_start ))
t_note "node 3 restarted with the store down: still not up after $waited ms; it says: ${line#* }"

t0=$(nodes_now_ms)
nodes_store_start || t_fail "cannot start the store again"
nodes_wait_all || t_fail "node 3 did not come up once the store was back: $(tail -n 2 "$NODES_TMP/logs/restart3.log")"
t1=$(nodes_now_ms)
. "$NODES_DIR/env"
[ "$(node_id 3)" = 2 ] || t_fail "node 3 came back as node id $(node_id 3), expected 2"
t_until 30000 "every node to see every other up once node 3 is back" all_up 1 2 3
t_note "store started again (pid $SHF_NODES_STORE_PID): node 3 ready $((t1 - t0)) ms later ($((t1 - restart_start)) ms after its restart), node id 2, up everywhere after $(( $(nodes_now_ms) - t0 )) ms"
run_job back 1 2 3
t_note "job on all 3 nodes after the store came back: exact ($JOB_MSGS msgs, $JOB_MS ms): ok"
