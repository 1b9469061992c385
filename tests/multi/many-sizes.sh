#!/usr/bin/env bash
# tests/multi/many-sizes.sh - shf_send_many() across 2 simulated nodes
# (loopback) x 2 ranks (bc-client many-sizes): calls of 1..300 records of
# 16 B to 20000 B to random ranks, so runs cross the wire, are cut at their
# limits and mix with records that go alone; every third call with
# SHF_NONBLOCK (a short count resent from there).  Every rank must get every
# record once, each pair in order, every byte right; no daemon counts a bad
# wire message.  ARGV: more bc-client arguments (more=1: the records go
# one by one with shf_send(SHF_MORE), held and grouped by the library).
T=multi-many-sizes-2${1:+-${1%%=*}}
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
BCCLIENT=${SHF_TEST_BCCLIENT:-$NODES_BUILD/tests/node/bc-client}
t_need "$BCCLIENT"
t_up --mode loopback -n 2
export SHF_JOB=msizes
for r in 0 1 2 3; do
  SHF_RANK=$r SHF_WORLD=4 nodes_client $((r / 2 + 1)) "rank$r" "$BCCLIENT" many-sizes \
    ops=40 batchcb=1 timeout=60000 "$@"
done
nodes_wait_all || t_fail "a rank failed"
out=$(cat "$NODES_TMP"/logs/rank*.log)
[ "$(grep -c 'many-sizes: ok' <<< "$out")" = 4 ] || { echo "$out" >&2; t_fail "not every rank reported"; }
for i in 1 2; do
  bad=$(nodes_stat "$i" .daemon.wire_bad)
  [ "$bad" = 0 ] || t_fail "node $i counted $bad bad wire messages"
done
t_note "$(grep 'many-sizes: ok' <<< "$out" | tr '\n' ' ')"
t_fault_check_clean # every daemon answers; none reported memory misuse
