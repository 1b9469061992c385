#!/bin/bash
# tests/slurm/slurm-cluster.sh - a real Slurm cluster on this machine
# (Debian 12's slurmctld, slurmd and munge 22.05; scripts/install-deps
# installs them): one munged, one slurmctld and one slurmd, with the
# Prolog, Epilog and TaskProlog configured as docs/operations.md says
# (PrologFlags=Alloc; Contain needs proctrack/cgroup, which a test box
# does not always give), the build's slurm-prolog and slurm-epilog, the
# build's shuffled and shufflectl (/etc/default/shuffle-slurm names them).
# Jobs run as nobody:
#   1. sbatch --comment=shuffle: an Open MPI job (mpirun -np 2 inside the
#      batch script) whose ranks find the job's own daemon through the
#      TaskProlog's SHF_RUNTIME_DIR, with exact counts (examples/
#      shuffle-example checks every message); the Epilog stops the daemon;
#   2. a job without the comment: no daemon, no directory, no
#      SHF_RUNTIME_DIR;
#   3. two job steps (srun) of one job side by side: two jobs JOB.0 and
#      JOB.1 on the job's daemon, both exact;
#   4. a Prolog whose daemon cannot start (SHUFFLE_OPTS=--no-such-option):
#      the job is requeued and held (scontrol show job: JobState=PENDING,
#      a held reason) and the node is not drained.
# It also records what slurmd 22.05 gives the Prolog (SLURM_JOB_COMMENT,
# SLURM_JOB_CONSTRAINTS) in its output.
# Everything is private: a mount namespace (/etc/default with our
# shuffle-slurm, /run/shuffle-slurm a tmpfs), the cluster's own ports,
# munge socket and state directories.  Root only; exit 77 otherwise, or
# when the Slurm packages are missing.
set -u
T=slurm-cluster
fail() {
	echo "$T: FAIL: $*" >&2
	for f in "$W"/log/*.log; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }
	done
	for f in "$W"/out.* /run/shuffle-slurm/slurm-*/shuffled.log; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }
	done
	exit 1
}
skip() {
	echo "$T: SKIP: $*" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs the Prolog as root; mount namespace)"
for p in slurmctld slurmd sbatch srun scontrol munged mpirun setpriv python3; do
	command -v $p >/dev/null ||
		skip "$p is not installed (scripts/install-deps installs slurmctld slurmd slurm-client munge)"
done
getent passwd munge >/dev/null || skip "no user munge (package munge)"
if [ -z "${SHF_SLURMC_IN_NS:-}" ]; then
	unshare --mount --propagation private true 2>/dev/null ||
		skip "cannot create a mount namespace here (unshare --mount)"
	exec env SHF_SLURMC_IN_NS=1 unshare --mount --propagation private "$0" "$@"
fi
shuffled=${SHF_TEST_SHUFFLED:?}
shufflectl=${SHF_TEST_SHUFFLECTL:?}
build=${SHF_TEST_BUILD_DIR:?}
example=$build/examples/shuffle-example
[ -x "$example" ] || skip "examples/shuffle-example is not built"
prolog=$build/scripts/slurm-prolog
epilog=$build/scripts/slurm-epilog
user=nobody
uid=$(id -u $user)
gid=$(id -g $user)

W=$(mktemp -d /tmp/shf-slurmc-XXXXXX)
chmod 0755 "$W"
mkdir -m 1777 "$W/jobs"
pids=()
cleanup() {
	local p
	[ -n "${SLURM_CONF:-}" ] && scancel --quiet --user="$user" 2>/dev/null
	for p in $(cat /run/shuffle-slurm/slurm-*/shuffled.pid 2>/dev/null); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = shuffled ] && kill -KILL "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	[ -f "$W/munge/pid" ] && kill -TERM "$(cat "$W/munge/pid")" 2>/dev/null
	umount /run/shuffle-slurm /etc/default 2>/dev/null
	rmdir /run/shuffle-slurm 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

# ---- munge: its own key and socket, as the munge user
mkdir -p "$W/munge" "$W/ctld" "$W/spool" "$W/log"
chown munge: "$W/munge"
head -c 1024 /dev/urandom >"$W/munge/key"
chown munge: "$W/munge/key"
chmod 0400 "$W/munge/key"
setpriv --reuid=munge --regid=munge --clear-groups munged --socket="$W/munge/sock" \
	--key-file="$W/munge/key" --log-file="$W/munge/log" --pid-file="$W/munge/pid" \
	--seed-file="$W/munge/seed" || fail "munged did not start: $(cat "$W/munge/log" 2>/dev/null)"

# ---- the shuffle settings the Prolog reads (in our /etc/default only)
mkdir "$W/default"
cp -a /etc/default/. "$W/default/"
settings() {
	{
		echo "SHUFFLE_SHUFFLED=$shuffled"
		echo "SHUFFLE_SHUFFLECTL=$shufflectl"
		echo "SHUFFLE_CGROUP=no"
		echo "SHUFFLE_START_TIMEOUT=20"
		echo "$@"
	} >"$W/default/shuffle-slurm"
}
settings
mount --bind "$W/default" /etc/default || skip "cannot bind-mount over /etc/default"
mkdir -p /run/shuffle-slurm
mount -t tmpfs -o mode=0755 tmpfs /run/shuffle-slurm || skip "cannot mount a tmpfs on /run/shuffle-slurm"

# ---- slurm.conf, as operations.md says for the Prolog/Epilog
node=$(hostname -s)
read -r p1 p2 < <(python3 -c 'import socket
a=[socket.socket() for _ in range(2)]
[s.bind(("127.0.0.1", 0)) for s in a]
print(*[s.getsockname()[1] for s in a])')
export SLURM_CONF=$W/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=shftest$$
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$p1
SlurmdPort=$p2
AuthType=auth/munge
AuthInfo=socket=$W/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$W/ctld
SlurmdSpoolDir=$W/spool/%n
SlurmctldPidFile=$W/ctld.pid
SlurmdPidFile=$W/slurmd-%n.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
Prolog=$prolog
Epilog=$epilog
TaskProlog=$prolog
PrologFlags=Alloc
NodeName=$node NodeAddr=127.0.0.1 CPUs=4 Features=shuffle State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >"$W/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$W/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
	sinfo -h -o '%t' 2>/dev/null | grep -qx idle && break
	sleep 0.1
done
sinfo -h -o '%t' 2>/dev/null | grep -qx idle ||
	fail "the node did not become idle: $(sinfo 2>&1; cat "$W"/log/*.out)"
echo "$T: slurmctld and slurmd $(slurmd -V | cut -d' ' -f2) up: node $node idle"

as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups env SLURM_CONF="$SLURM_CONF" "$@"; }
# submit SCRIPT [sbatch options]: waits for the job to end; its id in $job
submit() {
	local script=$1
	shift
	job=$(cd "$W/jobs" && as_user sbatch --parsable --wait -o "$W/jobs/out.%j" "$@" "$script")
	src=$?
	job=${job%%;*}
}
# the job's state, once it has left COMPLETING (the Epilog ran)
job_done() {
	local st
	for _ in $(seq 200); do
		st=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
		case $st in COMPLETING | RUNNING | CONFIGURING | "") sleep 0.1 ;; *) break ;; esac
	done
	echo "$st"
}

# ---- 1. an opted-in MPI job: its own daemon, exact counts, the Epilog stops it
cat >"$W/jobs/mpi.sh" <<EOF
#!/bin/bash
echo "SHF_RUNTIME_DIR=\${SHF_RUNTIME_DIR-unset}"
[ -S "\$SHF_RUNTIME_DIR/shuffled.sock" ] || { echo "no daemon socket"; exit 3; }
echo "daemon pid \$(cat "\$SHF_RUNTIME_DIR/shuffled.pid")"
mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader -np 2 \
	$example -n 5000 -t 30000 || exit 4
$shufflectl jobs --json > $W/jobs/mpi.jobs 2>&1
$shufflectl stats --json > $W/jobs/mpi.stats 2>&1
exit 0
EOF
chmod 755 "$W/jobs/mpi.sh"
submit "$W/jobs/mpi.sh" --comment=big,shuffle --constraint=shuffle -n 2
out=$W/jobs/out.$job
[ "$src" = 0 ] || fail "job $job (--comment=shuffle) exited $src: $(cat "$out")"
grep -qx "SHF_RUNTIME_DIR=/run/shuffle-slurm/slurm-$job" "$out" ||
	fail "job $job: the TaskProlog did not export the job's daemon: $(cat "$out")"
sent=$(awk '/^rank [0-9]+: sent/ {s += $4} END {print s + 0}' "$out")
got=$(awk '/^rank [0-9]+: sent/ {d += $6} END {print d + 0}' "$out")
[ "$sent" = 10000 ] && [ "$got" = 10000 ] || fail "job $job: sent $sent, delivered $got (want 10000): $(cat "$out")"
dpid=$(sed -n 's/^daemon pid //p' "$out")
[ "$(job_done "$job")" = COMPLETED ] || fail "job $job: $(scontrol show job "$job")"
for _ in $(seq 100); do [ -e "/run/shuffle-slurm/slurm-$job" ] || break; sleep 0.1; done
[ -e "/run/shuffle-slurm/slurm-$job" ] && fail "job $job: the Epilog left /run/shuffle-slurm/slurm-$job"
[ "$(cat /proc/"$dpid"/comm 2>/dev/null)" = shuffled ] && fail "job $job: its daemon (pid $dpid) still runs"
echo "$T: job $job (--comment=big,shuffle): mpirun -np 2 on the job's daemon (pid $dpid): sent $sent, delivered $got; the Epilog stopped it"

# ---- 2. a job without the comment: nothing
cat >"$W/jobs/plain.sh" <<'EOF'
#!/bin/bash
echo "SHF_RUNTIME_DIR=${SHF_RUNTIME_DIR-unset}"
ls -A /run/shuffle-slurm
exit 0
EOF
chmod 755 "$W/jobs/plain.sh"
submit "$W/jobs/plain.sh" -n 1
out=$W/jobs/out.$job
[ "$src" = 0 ] || fail "job $job (no comment) exited $src: $(cat "$out")"
[ "$(cat "$out")" = "SHF_RUNTIME_DIR=unset" ] ||
	fail "job $job without the comment saw a daemon or a directory: $(cat "$out")"
echo "$T: job $job (no comment): no SHF_RUNTIME_DIR, nothing in /run/shuffle-slurm"
# opting in by constraint alone: slurmd 22.05 gives the Prolog
# SLURM_JOB_CONSTRAINTS (and SLURM_JOB_COMMENT, used in 1.)
submit "$W/jobs/plain.sh" -n 1 --constraint=shuffle
out=$W/jobs/out.$job
[ "$src" = 0 ] || fail "job $job (--constraint=shuffle) exited $src: $(cat "$out")"
head -n 1 "$out" | grep -qx "SHF_RUNTIME_DIR=/run/shuffle-slurm/slurm-$job" ||
	fail "job $job (--constraint=shuffle) got no daemon: $(cat "$out")"
echo "$T: job $job (--constraint=shuffle only): a daemon (the Prolog saw SLURM_JOB_CONSTRAINTS)"

# ---- 3. two steps of one job side by side
cat >"$W/jobs/steps.sh" <<EOF
#!/bin/bash
srun -n 2 --exact $example -n 3000 -t 30000 > $W/jobs/step.a 2>&1 &
a=\$!
srun -n 2 --exact $example -n 3000 -t 30000 > $W/jobs/step.b 2>&1 &
b=\$!
wait \$a || exit 5
wait \$b || exit 6
cat \$SHF_RUNTIME_DIR/shuffled.log > $W/jobs/steps.log
exit 0
EOF
chmod 755 "$W/jobs/steps.sh"
submit "$W/jobs/steps.sh" --comment=shuffle -n 4
out=$W/jobs/out.$job
[ "$src" = 0 ] || fail "job $job (two steps) exited $src: $(cat "$out" "$W"/jobs/step.?)"
for s in a b; do
	n=$(awk '/^rank [0-9]+: sent/ {d += $6} END {print d + 0}' "$W/jobs/step.$s")
	[ "$n" = 6000 ] || fail "job $job step $s: delivered $n, not 6000: $(cat "$W/jobs/step.$s")"
done
for st in 0 1; do
	grep -q "$job\.$st\b" "$W/jobs/steps.log" ||
		fail "job $job: no job $job.$st on the job's daemon: $(cat "$W/jobs/steps.log")"
done
echo "$T: job $job: steps $job.0 and $job.1 side by side on the job's daemon, 6000 delivered each"

# ---- 4. the daemon cannot start: the job is requeued and held, the node stays up
settings "SHUFFLE_OPTS=--no-such-option"
job=$(cd "$W/jobs" && as_user sbatch --parsable -o /dev/null --comment=shuffle --wrap true)
job=${job%%;*}
held=
for _ in $(seq 200); do
	info=$(scontrol show job "$job" 2>/dev/null)
	if grep -q 'JobState=PENDING' <<<"$info" && grep -qE 'Reason=(job_requeued_in_held_state|JobHeld)' <<<"$info"; then
		held=1
		break
	fi
	sleep 0.1
done
[ -n "$held" ] || fail "job $job was not requeued and held: $(scontrol show job "$job")"
reason=$(sed -n 's/.*\(Reason=[^ ]*\).*/\1/p' <<<"$info")
nstate=$(scontrol show node "$node" | sed -n 's/.*State=\([^ ]*\).*/\1/p' | head -n 1)
case $nstate in *DRAIN*) fail "the node is drained after a failed Prolog: $(scontrol show node "$node")" ;; esac
scancel "$job"
settings
echo "$T: job $job (daemon cannot start): JobState=PENDING $reason; node $node $nstate, not drained"
echo "$T: OK"
