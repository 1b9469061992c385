#!/usr/bin/env bash
# tests/deploy/client-only.sh - deploy-client-only: -Ddaemon=false
# -Dtests=false configures and builds with pkg-config seeing only
# jansson and smartcols (libfabric, libevent, inih, libsodium and MPI
# hidden: PKG_CONFIG_LIBDIR), depends on none of them, and installs only
# the client's pieces: libshuffle-client, shuffle.h, shuffle-client.pc,
# shufflectl, their man pages.  The installed shufflectl and an app
# compiled against the installed tree then work against a daemon of the
# build under test (SHF_TEST_SHUFFLED).
. "$(dirname "$0")/common.sh"

# a pkg-config directory with the client's dependencies only
pc=$tmp/pkgconfig
mkdir -p "$pc"
for m in jansson smartcols; do
	f=$(pkg-config --variable=pcfiledir "$m")/$m.pc
	[ -f "$f" ] || fail "no $m.pc on this machine"
	cp "$f" "$pc/"
done
for m in libfabric libevent_core inih libsodium mpi; do
	PKG_CONFIG_LIBDIR=$pc pkg-config --exists "$m" && fail "$m still visible in $pc"
done
export PKG_CONFIG_LIBDIR=$pc
configure_install client -Ddaemon=false -Dtests=false
unset PKG_CONFIG_LIBDIR

deps=$(meson introspect "$tmp/client" --dependencies | jq -r '.[].name' | sort -u | tr '\n' ' ')
say "dependencies: $deps"
for m in libfabric libevent_core inih libsodium mpi; do
	grep -qw "$m" <<<"$deps" && fail "-Ddaemon=false looked up $m"
done

# installed: the client's pieces, and nothing of the daemon's
libdir_of
for f in bin/shufflectl include/shuffle.h; do
	[ -f "$prefix/$f" ] || fail "not installed: $f"
done
[ -e "$libdir/libshuffle-client.so.1" ] || fail "library not in $libdir"
for f in sbin/shuffled sbin/shuffle-keygen libexec/shuffle share/doc/shuffle; do
	[ -e "$prefix/$f" ] && fail "-Ddaemon=false installed $f"
done
find "$prefix" -name 'shuffled*' | grep . && fail "-Ddaemon=false installed the above"
if command -v scdoc >/dev/null; then
	[ -s "$prefix/share/man/man1/shufflectl.1" ] && [ -s "$prefix/share/man/man3/shuffle.3" ] &&
		[ -s "$prefix/share/man/man3/shf_open.3" ] || fail "client man pages not installed"
fi
for f in "$prefix/bin/shufflectl" "$libdir/libshuffle-client.so.1"; do
	check_ldd "$f"
	if env -i /usr/bin/ldd "$f" | grep -E 'libfabric|libevent|libinih|libsodium|libmpi'; then
		fail "$f links a daemon dependency (above)"
	fi
done

# it works: a daemon of the build under test, the installed shufflectl and
# an app built against the installed tree
shuffled=${SHF_TEST_SHUFFLED:-}
if [ -z "$shuffled" ]; then
	say "no shuffled in the build under test (-Ddaemon=false): installed tree checked, not run"
	exit 0
fi
home=$tmp/home
mkdir -p "$home"
build_app self "$home"
"$shuffled" --runtime-dir="$home/run" --node-name=deploy-client --rendezvous=none \
	--log-file="$home/shuffled.log" </dev/null >"$home/shuffled.out" 2>&1 &
pid=$!
pids+=("$pid")
wait_ctl self "$home/run/shuffled.sock" "$pid"
run_job self "$home/run/shuffled.sock" "$home" 2
clean_env shufflectl -s "$home/run/shuffled.sock" status | grep -q deploy-client ||
	fail "the installed shufflectl does not show the daemon's status"
kill -TERM "$pid"
wait "$pid" || fail "shuffled exited $? after SIGTERM"
say "ok"
