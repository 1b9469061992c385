#!/usr/bin/env bash
# tests/multi/store-trust.sh CASE - the tcp:// store decides nothing that a
# running, keyed set does not confirm (issue 24).  Loopback nodes meeting
# through `scripts/nodes --rdv tcp` (a cluster key on every daemon); the
# forger is tests/multi/store-cli (anyone who reaches the store's port) and
# wire-inject (anyone who can bind a free address).  Each CASE:
#
#  restart  the store is killed (-9) and started again, empty; within a
#           second a new node (n3) starts: it must not get a running node's
#           id (0 or 1), the pair 1-2 keeps its session, and a job on all
#           three runs exactly;
#  liveid   /shuffle/id/<n3> is set to 1 (node 2's id) before n3 starts: n3
#           must run under another id, the pair 1-2 keeps its session, a job
#           on all three runs exactly;
#  forge    node 2's record is rewritten to name a vacant address (same
#           incarnation), and a forger bound there sends node 1 heartbeats
#           and more claiming node id 1: node 1 keeps node 2's address (its
#           session with node 2 stays the first one, addr_held counted),
#           node 2 repairs its record (a conflict in its log), a job on
#           1-2 runs exactly.  With a key node 1 ignores the forged record
#           (no MAC: store_bad_mac counted); with `nokey` (second argument)
#           it reads it but keeps the address of a peer in a session
#           (addr_held counted);
#  garbage  node 2's record is overwritten with garbage: node 2 repairs it
#           and a node started afterwards (n3) meets node 2; a job on all
#           three runs exactly.
T=multi-store-trust-${1:-restart}${2:+-$2}
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
CASE=${1:-restart}
KEYARG=()
[ "${2-}" = nokey ] && KEYARG=(--no-key)
STORE_CLI=${SHF_TEST_STORE_CLI:-$NODES_BUILD/tests/multi/store-cli}
t_need "$TCLIENT"
t_need "$STORE_CLI"
t_need "$WIRE_INJECT"
K=2
t_up --mode loopback -n 3 --rdv tcp --defer 3 "${KEYARG[@]}" \
  --daemon-args "--peer-timeout-ms 1000 --heartbeat-ms 200"
store() { "$STORE_CLI" "$SHF_NODES_STORE_ADDR" "$@"; }
node_id() { nodes_json "$1" status 2>/dev/null | jq -r '.node_id'; }
all_up() {
  local i p
  for i in "$@"; do
    for p in "$@"; do
      [ "$p" = "$i" ] && continue
      [ "$(nodes_peer_state "$i" "$(node_id "$p")")" = up ] || return 1
    done
  done
}
# a job of K ranks per node, tclient traffic, counts exact
run_job() {
  local job=$1 i k r=0 sent=0 got=0 a b
  shift
  local w=$(( $# * K ))
  for i in "$@"; do
    for k in $(seq 1 $K); do
      SHF_JOB=$job SHF_WORLD=$w SHF_RANK=$r nodes_client "$i" "$job$r" "$TCLIENT" \
        traffic n=500 rounds=2 maxlen=200 timeout=20000
      r=$((r + 1))
    done
  done
  nodes_wait_all || t_fail "job $job failed"
  for r in $(seq 0 $((w - 1))); do
    read -r a b < <(sed -n 's/^rank [0-9]*: sent \([0-9]*\) delivered \([0-9]*\).*/\1 \2/p' \
      "$NODES_TMP/logs/$job$r.log")
    sent=$((sent + ${a:-0})) got=$((got + ${b:-0}))
  done
  [ "$sent" = "$got" ] && [ "$sent" -gt 0 ] || t_fail "job $job: $sent sent, $got delivered"
  t_note "job $job on nodes $*: exact ($sent messages)"
}
wait_for() {  # wait_for MS WHAT CMD... (t_until checks node 3's daemon, not started yet)
  local ms=$1 what=$2 end
  shift 2
  end=$(( $(nodes_now_ms) + ms ))
  until "$@"; do
    [ "$(nodes_now_ms)" -lt "$end" ] || t_fail "timed out ($ms ms) waiting for: $what"
    sleep 0.05
  done
}
pair_kept() {  # the pair 1-2 still runs its first session
  local s12 s21
  s12=$(t_peer_field 1 1 sessions) s21=$(t_peer_field 2 0 sessions)
  [ "$(nodes_peer_state 1 1)" = up ] && [ "$(nodes_peer_state 2 0)" = up ] ||
    t_fail "the pair 1-2 is not up: node 1 sees node 2 '$(nodes_peer_state 1 1)', node 2 sees node 1 '$(nodes_peer_state 2 0)'"
  [ "$s12" = 1 ] && [ "$s21" = 1 ] ||
    t_fail "the pair 1-2 was cut off meanwhile (sessions $s12 and $s21, expected 1)"
}
wait_for 20000 "nodes 1 and 2 to see each other up" all_up 1 2
[ "$(node_id 1)" = 0 ] && [ "$(node_id 2)" = 1 ] || t_fail "ids $(node_id 1) $(node_id 2)"
n2=$(nodes_var HOST 2) n3=$(nodes_var HOST 3)

case "$CASE" in
restart)
  nodes_store_kill || t_fail "cannot kill the store"
  nodes_store_start || t_fail "cannot start the store again"
  t0=$(nodes_now_ms)
  nodes start --node 3 || t_fail "cannot start node 3 (it reports node id $(node_id 3))"
  . "$NODES_DIR/env"
  id3=$(node_id 3)
  t_note "store restarted empty; node 3 started at once: node id $id3 after $(( $(nodes_now_ms) - t0 )) ms"
  [ "$id3" != 0 ] && [ "$id3" != 1 ] || t_fail "node 3 got node id $id3, held by a running node"
  ;;
liveid)
  store set "/shuffle/id/$n3" 1 || t_fail "cannot write the store"
  nodes start --node 3 || t_fail "cannot start node 3 (it reports node id $(node_id 3))"
  . "$NODES_DIR/env"
  id3=$(node_id 3)
  t_note "the store said node id 1 for $n3: it runs as node id $id3"
  [ "$id3" != 0 ] && [ "$id3" != 1 ] || t_fail "node 3 runs as node id $id3, held by a running node"
  grep -q "took another id" "$(nodes_var LOG 3)" || t_fail "node 3 did not log the id it refused"
  ;;
forge)
  rec=$(store get /shuffle/node/1) || t_fail "no record for node 1 in the store"
  t_note "node 2's record: $rec"
  read -r v inc addr name <<< "$rec"
  net=$SHF_NODES_NET
  iphex() { local IFS=.; set -- $1; printf '%02x%02x%02x%02x' "$1" "$2" "$3" "$4"; }
  real=$(iphex "$net.2") fake=$(iphex "$net.9")
  [[ "$addr" == *"$real"* ]] || t_skip "cannot find node 2's IP ($real) in its record's address $addr"
  forged="$v $inc ${addr/$real/$fake} $name"
  store set /shuffle/node/1 "$forged" || t_fail "cannot write the store"
  t_note "forged: $forged"
  # node 2 repairs its record within a second: the forger writes it again
  # and again while its messages go out
  # (bounded: 8 s at most, should the test end early)
  ( for _ in $(seq 160); do store set /shuffle/node/1 "$forged"; sleep 0.05; done ) &
  rewriter=$!
  counter=store_bad_mac
  [ "${2-}" = nokey ] && counter=addr_held
  held0=$(nodes_stat 1 ".daemon.$counter")
  for k in 1 2 3; do
    "$WIRE_INJECT" --me 2 --nodes 3 --bind "$net.9:$SHF_NODES_PORT" \
      --peer "0=$SHF_NODES_ADDR_1" forge 0 1 nojob 0 >"$NODES_TMP/logs/forge$k.log" 2>&1 ||
      { cat "$NODES_TMP/logs/forge$k.log" >&2; t_fail "the forger failed"; }
    sleep 1.1 # (one lookup per claimed node per second)
  done
  kill "$rewriter"; wait "$rewriter" 2>/dev/null
  held=$(nodes_stat 1 ".daemon.$counter")
  t_note "node 1: $counter $held0 -> $held"
  pair_kept
  [ "$held" -gt "$held0" ] 2>/dev/null || t_fail "node 1 did not count the forged record it refused ($counter $held)"
  wait_for 5000 "node 2 to repair its record" eval '[ "$(store get /shuffle/node/1)" = "$rec" ]'
  grep -q "conflict, repaired" "$(nodes_var LOG 2)" || t_fail "node 2 did not log the conflict"
  run_job forged 1 2
  exit 0
  ;;
garbage)
  rec=$(store get /shuffle/node/1) || t_fail "no record for node 1 in the store"
  store set /shuffle/node/1 "v1 zz garbage" || t_fail "cannot write the store"
  wait_for 5000 "node 2 to repair its record" eval '[ "$(store get /shuffle/node/1)" = "$rec" ]'
  grep -q "conflict, repaired" "$(nodes_var LOG 2)" || t_fail "node 2 did not log the repair"
  store set /shuffle/node/1 "v1 zz garbage" || t_fail "cannot write the store"
  sleep 1.5
  [ "$(store get /shuffle/node/1)" = "$rec" ] || t_fail "node 2 did not repair its record again"
  nodes start --node 3 || t_fail "cannot start node 3 (it reports node id $(node_id 3))"
  . "$NODES_DIR/env"
  ;;
*) t_fail "unknown case $CASE" ;;
esac
t_until 20000 "every node to see every other up" all_up 1 2 3
pair_kept
run_job all 1 2 3
t_daemons_alive
