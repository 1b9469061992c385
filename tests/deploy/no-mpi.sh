#!/usr/bin/env bash
# tests/deploy/no-mpi.sh - deploy-no-mpi: -Drdv_mpi=disabled builds a
# shuffled that does not link MPI (no MPI in meson's dependencies, no
# libmpi in ldd of the installed daemon), refuses rendezvous=mpi at start
# and auto under a launcher with a message naming the missing rendezvous,
# still runs alone; and the config and rendezvous-grammar unit tests of
# that configuration (their -Drdv_mpi=disabled branches) pass.
. "$(dirname "$0")/common.sh"

configure_install nompi -Drdv_mpi=disabled -Dtests=false

deps=$(meson introspect "$tmp/nompi" --dependencies | jq -r '.[].name' | sort -u | tr '\n' ' ')
say "dependencies: $deps"
grep -qiw mpi <<<"$deps" && fail "-Drdv_mpi=disabled still looked up MPI"
shuffled=$prefix/sbin/shuffled
check_ldd "$shuffled"
if env -i /usr/bin/ldd "$shuffled" | grep -i mpi; then
	fail "shuffled links MPI (above)"
fi

home=$tmp/home
mkdir -p "$home"
# rendezvous=mpi: refused at start, saying why
rc=0
out=$(clean_env "$shuffled" --runtime-dir="$home/run1" --rendezvous=mpi 2>&1) || rc=$?
say "--rendezvous=mpi: exit $rc: $out"
[ $rc -ne 0 ] || fail "--rendezvous=mpi accepted by a daemon without the mpi rendezvous"
grep -q "built without the mpi rendezvous" <<<"$out" || fail "no clear reason for the refusal"
# auto under a launcher (Open MPI's variables): refused the same way
rc=0
out=$(clean_env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 timeout -k 5 30 "$shuffled" \
	--runtime-dir="$home/run2" 2>&1) || rc=$?
say "auto under mpirun's variables: exit $rc: $(tail -n 1 <<<"$out")"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "auto under a launcher: exit $rc"
grep -q "built without the mpi rendezvous" <<<"$out" || {
	echo "$out" >&2
	fail "auto under a launcher: no clear reason"
}
# alone it runs
start_bg self "$shuffled" --runtime-dir="$home/run3" --rendezvous=none >"$home/alone.out" 2>&1
wait_ctl self "$home/run3/shuffled.sock" "$bg_pid"
kill -TERM "$bg_pid"
wait "$bg_pid" || fail "shuffled alone exited $? after SIGTERM"

# the unit tests' -Drdv_mpi=disabled branches
meson configure "$tmp/nompi" -Dtests=true >>"$tmp/nompi.log" 2>&1 || fail "meson configure -Dtests=true"
ninja -C "$tmp/nompi" -j "${SHF_DEPLOY_JOBS:-2}" tests/daemon/test-config-values tests/unit/addr \
	>>"$tmp/nompi.log" 2>&1 || {
	tail -n 20 "$tmp/nompi.log" >&2
	fail "building the unit tests"
}
"$tmp/nompi/tests/daemon/test-config-values" || fail "config-values without the mpi rendezvous"
"$tmp/nompi/tests/unit/addr" || fail "addr without the mpi rendezvous"
say "ok"
