#!/usr/bin/env bash
# tests/package/package.sh - suite 'package': build the Debian packages
# with scripts/package, install them on this machine, start the packaged
# daemon the way its systemd unit does (as the system user, in the unit's
# runtime directory), run a job compiled against the packaged -dev as an
# unprivileged user with no SHF_* variables, then purge the packages.
#
# Root only (dpkg, other uids, a mount namespace): skips with 77 otherwise.
# It refuses (77) to run where the packages are already installed, since
# it would replace and purge them.  /run/shuffle is a tmpfs of its own in a
# private mount namespace, so a system daemon of this machine is never
# touched.
set -uo pipefail
T=package
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "$T: FAIL: $*" >&2; exit 1; }
skip() { echo "$T: SKIP: $*" >&2; exit 77; }
note() { echo "$T: $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (dpkg -i, a mount namespace, other uids)"
if [ -z "${SHF_PKG_IN_NS:-}" ]; then
	unshare --mount --propagation private true 2>/dev/null ||
		skip "cannot create a mount namespace here (unshare --mount)"
	exec env SHF_PKG_IN_NS=1 unshare --mount --propagation private "$0" "$@"
fi
for p in shuffled libshuffle-client1 libshuffle-client-dev shuffled-dbgsym libshuffle-client1-dbgsym python3-shuffle; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		skip "package $p is already installed here; this test would replace and purge it"
	fi
done
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
	fail "dpkg-buildpackage or debhelper is missing (scripts/install-deps installs them)"

work=$(mktemp -d /tmp/shuffle-pkgtest.XXXXXX) || fail "mktemp"
chmod 755 "$work"
daemon_pid=
made_run=
cleanup() {
	[ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	dpkg --purge python3-shuffle python3-shuffle-dbgsym >/dev/null 2>&1
	dpkg --purge libshuffle-client1-dbgsym shuffled-dbgsym libshuffle-client-dev \
		libshuffle-client1 shuffled >/dev/null 2>&1
	umount /run/shuffle 2>/dev/null
	[ -n "$made_run" ] && rmdir /run/shuffle 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. build
note "building the packages (scripts/package)"
"$SRC/scripts/package" --out "$work/pkgs" > "$work/package.log" 2>&1 || {
	tail -n 40 "$work/package.log" >&2
	fail "scripts/package failed"
}
grep -E '^[EWIP]: ' "$work/pkgs/lintian.txt" | sed "s/^/$T: lintian: /"
for p in shuffled libshuffle-client1 libshuffle-client-dev; do
	ls "$work/pkgs/${p}_"*.deb >/dev/null 2>&1 || fail "no $p package was built"
done

# ---- 2. install
debs=()
for p in shuffled libshuffle-client1 libshuffle-client-dev; do
	debs+=("$work/pkgs/${p}_"*.deb)
done
dpkg -i "${debs[@]}" > "$work/dpkg.log" 2>&1 || {
	cat "$work/dpkg.log" >&2
	fail "dpkg -i of the packages failed"
}
note "installed: $(dpkg-query -W -f='${Package} ${Version}, ' shuffled libshuffle-client1 libshuffle-client-dev)"
getent passwd shuffle >/dev/null || fail "the package did not create the system user 'shuffle'"
unit=/lib/systemd/system/shuffled.service
[ -f "$unit" ] || fail "no unit at $unit"
for f in /usr/sbin/shuffled /usr/bin/shufflectl /usr/include/shuffle.h; do
	[ -e "$f" ] || fail "$f is not installed"
done
ldd /usr/sbin/shuffled /usr/bin/shufflectl | grep -q 'not found' &&
	fail "an installed program misses a library: $(ldd /usr/sbin/shuffled /usr/bin/shufflectl | grep 'not found')"
man -w 8 shuffled >/dev/null 2>&1 || fail "man page shuffled(8) is not installed"
man -w 3 shf_open >/dev/null 2>&1 || fail "man page shf_open(3) is not installed"
if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify "$unit" > "$work/verify.log" 2>&1 ||
		{ cat "$work/verify.log" >&2; fail "systemd-analyze verify $unit failed"; }
	note "systemd-analyze verify: clean"
fi

# ---- 3. the packaged daemon, started as its unit starts it
user=$(sed -n 's/^User=//p' "$unit" | tail -n 1)
[ -n "$user" ] || fail "the unit has no User= (the system daemon must not run as root)"
getent passwd "$user" >/dev/null || fail "the unit's user $user does not exist"
rtdir=$(sed -n 's/^RuntimeDirectory=//p' "$unit" | tail -n 1)
[ "$rtdir" = shuffle ] || fail "the unit's RuntimeDirectory is '$rtdir', not shuffle"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit" | tail -n 1)
exe=${exec_start%% *}
[ "$exe" = /usr/sbin/shuffled ] || fail "the unit starts '$exe', not /usr/sbin/shuffled"
[ -d /run/shuffle ] || { mkdir /run/shuffle && made_run=1; }
mount -t tmpfs -o mode=0755 tmpfs /run/shuffle || fail "cannot mount a tmpfs on /run/shuffle"
chown "$user:$user" /run/shuffle    # what RuntimeDirectory= does
node=$(hostname)
mkdir "$work/log" && chown "$user:$user" "$work/log"   # what LogsDirectory= does
# the unit's environment: RUNTIME_DIRECTORY, no NOTIFY_SOCKET, and
# /etc/default/shuffled left out (the test must not read the machine's)
setpriv --reuid="$user" --regid="$user" --init-groups \
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin RUNTIME_DIRECTORY=/run/shuffle \
	/usr/sbin/shuffled --log-file="$work/log/shuffled.log" > "$work/shuffled.out" 2>&1 &
daemon_pid=$!
sock=/run/shuffle/$node/shuffled.sock
for _ in $(seq 1 200); do
	[ -S "$sock" ] && break
	kill -0 "$daemon_pid" 2>/dev/null || { cat "$work"/shuffled.out "$work"/log/shuffled.log >&2; fail "the packaged daemon exited"; }
	sleep 0.1
done
[ -S "$sock" ] || { cat "$work"/shuffled.out "$work"/log/shuffled.log >&2; fail "no socket at $sock after 20 s"; }
owner=$(stat -c %U "$sock")
[ "$owner" = "$user" ] || fail "the socket belongs to $owner, not $user"
note "packaged daemon up as $user: $sock ($(stat -c %a "$sock"))"

# ---- 4. a job compiled against the packaged -dev, run by another user
cflags=$(pkg-config --cflags --libs shuffle-client) || fail "pkg-config does not know shuffle-client"
cc -O2 -o "$work/app" "$SRC/examples/shuffle-example.c" $cflags -pthread ||
	fail "cannot compile the example against the packaged header and library"
# (Debian 12 merges /lib into /usr/lib: compare resolved paths)
used=$(ldd "$work/app" | awk '/libshuffle-client.so.1/ {print $3}')
[ -n "$used" ] && [ "$(readlink -f "$used")" = "$(readlink -f "$(dpkg -L libshuffle-client1 | grep 'libshuffle-client.so.1$')")" ] ||
	fail "the app does not use the packaged library: $(ldd "$work/app" | grep shuffle)"
pids=()
for r in 0 1 2 3; do
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env -i PATH=/usr/bin:/bin SHF_RANK=$r SHF_WORLD=4 SHF_JOB=pkgtest \
		"$work/app" -n 20000 -t 30000 > "$work/app.$r" 2>&1 &
	pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || { rc=1; cat "$work/app.$i" >&2; }
done
[ "$rc" = 0 ] || fail "the packaged job failed"
delivered=$(cat "$work"/app.? | awk '/delivered/ {d += $NF} END {print d+0}')
[ "$delivered" = 80000 ] || fail "delivered $delivered messages in all, not 80000: $(cat "$work"/app.?)"
note "job of uid 65534 against the packaged -dev: 4 ranks, 80000 messages delivered"
setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin \
	shufflectl status > "$work/status" 2>&1 || { cat "$work/status" >&2; fail "shufflectl status as uid 65534 failed"; }
note "shufflectl status (uid 65534, no environment): $(head -n 1 "$work/status")"

# ---- 4b. python3-shuffle: Debian's /usr/bin/python3 runs the word-count
# example from the package's docs against the packaged daemon, as uid 65534
if ls "$work/pkgs/python3-shuffle_"*.deb >/dev/null 2>&1; then
	dpkg -i "$work/pkgs/python3-shuffle_"*.deb > "$work/dpkg-py.log" 2>&1 ||
		{ cat "$work/dpkg-py.log" >&2; fail "dpkg -i python3-shuffle failed (Depends?)"; }
	ex=/usr/share/doc/python3-shuffle/examples/wordcount.py
	[ -f "$ex" ] || fail "python3-shuffle has no $ex"
	pids=()
	for r in 0 1 2 3; do
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			env -i PATH=/usr/bin:/bin SHF_RANK=$r SHF_WORLD=4 SHF_JOB=pkgpy \
			/usr/bin/python3 "$ex" > "$work/py.$r" 2>&1 &
		pids+=($!)
	done
	rc=0
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || { rc=1; cat "$work/py.$i" >&2; }
	done
	[ "$rc" = 0 ] || fail "the packaged Python word count failed"
	grep -q "matches the serial count" "$work/py.0" || fail "word count: $(cat "$work/py.0")"
	note "python3-shuffle: $(tail -n 1 "$work/py.0")"
	dpkg --purge python3-shuffle > "$work/purge-py.log" 2>&1 ||
		{ cat "$work/purge-py.log" >&2; fail "dpkg --purge python3-shuffle failed"; }
else
	fail "no python3-shuffle package was built"
fi

kill -TERM "$daemon_pid"
wait "$daemon_pid"
drc=$?
daemon_pid=
[ "$drc" = 0 ] || fail "the packaged daemon exited with $drc on SIGTERM"
[ -e "$sock" ] && fail "the socket is still there after a clean stop"

# ---- 5. purge
dpkg --purge libshuffle-client-dev libshuffle-client1 shuffled > "$work/purge.log" 2>&1 ||
	{ cat "$work/purge.log" >&2; fail "dpkg --purge failed"; }
for f in /usr/sbin/shuffled /usr/bin/shufflectl /usr/include/shuffle.h "$unit"; do
	[ -e "$f" ] && fail "$f is still there after purge"
done
note "purged"
exit 0
