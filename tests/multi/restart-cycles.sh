#!/usr/bin/env bash
# tests/multi/restart-cycles.sh - a node restarted 20 times while a job
# runs elsewhere: the survivors stay correct and their memory stays flat.
#
# 3 loopback nodes (static rendezvous).  A job of 4 ranks on nodes 1 and 3
# streams (tclient traffic, many rounds, each closed by an epoch) while
# node 2's daemon is killed (-9) and restarted 20 times; after each restart
# nodes 1 and 3 must see it up again (a new session each time).  The job
# must end exact (counts, order, every epoch), nodes 1 and 3 must never
# restart, and their RSS after cycle 20 must be within 2 MiB of their RSS
# after cycle 3 (not checked under sanitizers: their RSS means nothing).
# Then a job on all three nodes runs exactly.
#
# restart-cycles.sh dirfree CYCLES: the same through dir:PATH without N,
# where a restarted daemon binds a new ephemeral port: the others learn its
# new address from its file (the same directory, kept across restarts).
rdv=${1:-static} CYCLES=${2:-20}
T=multi-restart-cycles$([ "$rdv" = static ] || echo "-$rdv")
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=3
[ "$CYCLES" -ge 4 ] || t_fail "at least 4 cycles (RSS is compared from cycle 3)"
t_up --mode loopback --rdv "$rdv" -n $N --daemon-args "--peer-timeout-ms 2000 --heartbeat-ms 200"
pids="$(nodes_var PID 1) $(nodes_var PID 3)"
sanitized=0
case "$(ldd "$SHF_NODES_SHUFFLED" 2>/dev/null)" in *libasan* | *libtsan*) sanitized=1 ;; esac

export SHF_JOB=elsewhere SHF_WORLD=4
for r in 0 1 2 3; do
  node=$([ $r -lt 2 ] && echo 1 || echo 3)
  SHF_RANK=$r nodes_client $node "else$r" "$TCLIENT" traffic n=400 rounds=30 maxlen=600 \
    hold=release timeout=120000
done

# up in a new session: right after a restart the survivors may still show
# the old session up (the kill is not noticed yet), so count sessions too
# (the first one is from before restart 1)
up_again() { t_peer_is "$1" 1 up && [ "$(t_peer_field "$1" 1 sessions)" -ge "$2" ]; }
up_on_survivors() { up_again 1 $((c + 1)) && up_again 3 $((c + 1)); }
declare -A rss3=()
for c in $(seq 1 $CYCLES); do
  nodes_restart 2 || t_fail "restart $c of node 2 failed"
  t_until 20000 "nodes 1 and 3 to see node 2 up after restart $c" up_on_survivors
  if [ $c = 3 ]; then
    for i in 1 3; do rss3[$i]=$(nodes_rss_kb "$(nodes_var PID "$i")"); done
  fi
done
for i in 1 3; do
  s=$(t_peer_field $i 1 sessions)
  [ "$s" -ge $((CYCLES + 1)) ] || t_fail "node $i: $s sessions with node 2 after $CYCLES restarts"
  now=$(nodes_rss_kb "$(nodes_var PID "$i")")
  t_note "node $i: RSS $((rss3[$i])) KiB after restart 3, $now KiB after restart $CYCLES ($s sessions with node 2)"
  [ $sanitized = 1 ] || [ "$now" -le $((rss3[$i] + 2048)) ] ||
    t_fail "node $i: RSS grew from ${rss3[$i]} to $now KiB over $((CYCLES - 3)) restarts of node 2"
done
[ $sanitized = 0 ] || t_note "sanitizer build: the RSS bound is not checked"
t_release_held 0 1 2 3
nodes_wait_all || t_fail "the job on nodes 1 and 3 failed"
[ "$(nodes_var PID 1) $(nodes_var PID 3)" = "$pids" ] || t_fail "node 1 or 3 restarted"
t_note "$CYCLES restarts of node 2 while a job ran on nodes 1 and 3: exact: ok"

rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release
export SHF_JOB=all SHF_WORLD=6
for r in $(seq 0 5); do
  SHF_RANK=$r nodes_client $((r / 2 + 1)) "all$r" "$TCLIENT" traffic n=500 rounds=2 hold=release
done
t_release_held $(seq 0 5)
nodes_wait_all || t_fail "a job on all 3 nodes after the restarts failed"
t_note "a job on all 3 nodes after $CYCLES restarts: exact: ok"
