#!/usr/bin/env bash
# tests/multi/restart-harness.sh - scripts/nodes restart: 2 loopback nodes
# (static rendezvous, then dir), node 2's daemon killed (SIGKILL, then
# SIGTERM) and started again with the same command line: a new pid, its
# socket answers, it is node id 1 again (the harness checks), node 1 is
# untouched; an mpi-launched set refuses.  No data flow across the
# restart (the rejoin protocol is not in yet).
T=restart-harness
. "$(dirname "$0")/common.sh"

check_restart() { # RDV SIGNAL...
  local rdv=$1 sig old new p1
  shift
  p1=$(nodes_var PID 1)
  for sig in "$@"; do
    old=$(nodes_var PID 2)
    kill -0 "$old" 2>/dev/null || t_fail "$rdv: node 2's daemon $old is not running before restart"
    if [ "$sig" = KILL ]; then nodes_restart 2; else nodes_restart 2 --signal "$sig"; fi ||
      t_fail "scripts/nodes restart --node 2 (SIG$sig) failed"
    new=$(nodes_var PID 2)
    [ -n "$new" ] && [ "$new" != "$old" ] || t_fail "node 2's pid did not change ($old -> $new)"
    kill -0 "$old" 2>/dev/null && t_fail "the old daemon $old is still alive"
    [ "$(nodes pid --node 2)" = "$new" ] || t_fail "scripts/nodes pid disagrees with RUNDIR/env"
    nodes_json 2 status >/dev/null || t_fail "node 2's socket does not answer after restart"
    [ "$(nodes_json 2 status | jq -r .node_id)" = 1 ] || t_fail "node 2 is not node id 1 any more"
    [ "$(nodes_var PID 1)" = "$p1" ] && kill -0 "$p1" || t_fail "node 1 was disturbed"
    nodes_json 1 status >/dev/null || t_fail "node 1 stopped answering"
    t_note "$rdv: SIG$sig restart ok (pid $old -> $new)"
  done
}

t_up --mode loopback -n 2 --rdv static
check_restart static KILL TERM
nodes_down || t_fail "down"

t_up --mode loopback -n 2 --rdv dir
check_restart dir KILL
# node 2 rewrote its own file: its incarnation changed, still one file per node
[ "$(ls "$NODES_DIR/rdv" | grep -c '\.addr$')" = 2 ] || t_fail "rdv dir: $(ls "$NODES_DIR/rdv")"
nodes_down || t_fail "down"

# an mpi-launched daemon cannot be restarted alone
if command -v mpirun >/dev/null; then
  t_up --mode loopback -n 2 --rdv mpi
  out=$(nodes restart --node 2 2>&1) && t_fail "restart of an mpi-launched node succeeded"
  grep -q "cannot be restarted alone" <<< "$out" || t_fail "unclear refusal: $out"
  t_note "mpi: refused ($out)"
fi
t_note PASS
