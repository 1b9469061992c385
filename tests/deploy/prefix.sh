#!/usr/bin/env bash
# tests/deploy/prefix.sh - deploy-prefix: `meson install` into a temporary
# prefix puts every piece where docs/install.md says, with the prefix's
# paths filled in, and the installed tree works on its own:
#   - the layout: shuffled and shuffle-keygen in sbin, shufflectl in bin,
#     the library, header and .pc, the man pages (shuffle(3) plus a page
#     for every function the installed library exports), the systemd unit
#     (systemd-analyze verify, when present), the Slurm scripts in
#     libexec/shuffle, the example config; no shuffle-bench; no path of
#     another prefix in anything installed;
#   - every installed program and a client app compiled against the
#     installed header and .pc (cc ... -Wl,-rpath,LIBDIR) find their
#     libraries without LD_LIBRARY_PATH;
#   - from the installed tree only (env -i, minimal PATH): shuffled with a
#     private runtime directory and the example config (every key
#     uncommented), two ranks of the app, `shufflectl status`; as root,
#     then as an unprivileged user (nobody, through setpriv).
# Needs root for the second user (exit 77 after the first part without).
. "$(dirname "$0")/common.sh"

configure_install full -Dtests=false

# ---- the layout ----------------------------------------------------------
for f in sbin/shuffled sbin/shuffle-keygen bin/shufflectl include/shuffle.h \
	libexec/shuffle/slurm-prolog libexec/shuffle/slurm-epilog; do
	[ -f "$prefix/$f" ] || fail "not installed: $f"
done
for f in sbin/shuffled sbin/shuffle-keygen bin/shufflectl libexec/shuffle/slurm-prolog \
	libexec/shuffle/slurm-epilog; do
	[ -x "$prefix/$f" ] || fail "not executable: $f"
done
libdir_of
[ -e "$libdir/libshuffle-client.so.1" ] && [ -e "$libdir/libshuffle-client.so" ] ||
	fail "library not in $libdir"
find "$prefix" -name 'shuffle-bench*' | grep -q . && fail "shuffle-bench is installed"
example=$prefix/share/doc/shuffle/examples/shuffled.conf.example
[ -f "$example" ] || fail "no example config at $example"
unit=$(find "$prefix" -name shuffled.service)
[ -n "$unit" ] || fail "shuffled.service not installed under $prefix"
case "$unit" in "$prefix"/lib/systemd/system/shuffled.service) ;;
*) fail "unit at $unit, not in PREFIX/lib/systemd/system" ;;
esac
grep -qx "ExecStart=$prefix/sbin/shuffled .*" "$unit" ||
	fail "the unit does not start $prefix/sbin/shuffled: $(grep ExecStart "$unit")"
grep -q "^: \"\${SHUFFLE_SHUFFLED:=$prefix/sbin/shuffled}\"" "$prefix/libexec/shuffle/slurm-prolog" ||
	fail "slurm-prolog's default daemon is not $prefix/sbin/shuffled"
grep -q "^: \"\${SHUFFLE_SHUFFLECTL:=$prefix/bin/shufflectl}\"" "$prefix/libexec/shuffle/slurm-prolog" ||
	fail "slurm-prolog's default shufflectl is not $prefix/bin/shufflectl"
# nothing installed names another prefix or an unfilled @placeholder@
for f in "$unit" "$prefix"/libexec/shuffle/*; do
	if grep -nE '/usr/local|@[a-z_]+@' "$f"; then
		fail "$f: a path of another prefix or an unsubstituted placeholder (above)"
	fi
	bash -n "$f" 2>/dev/null || [ "$f" = "$unit" ] || fail "$f: not valid bash"
done

# man pages: every function the installed library exports has one
if command -v scdoc >/dev/null; then
	man=$prefix/share/man
	for p in man8/shuffled.8 man1/shufflectl.1 man3/shuffle.3; do
		[ -s "$man/$p" ] || fail "man page not installed: $p"
	done
	syms=$(nm -D --defined-only "$libdir/libshuffle-client.so.1" | awk '$2 == "T" { print $3 }' |
		sed 's/@.*//' | sort -u)
	[ "$(wc -l <<<"$syms")" -ge 10 ] || fail "only $(wc -l <<<"$syms") exported functions?"
	for s in $syms; do
		[ -s "$man/man3/$s.3" ] || fail "exported $s has no man page man3/$s.3"
		grep -qx '.so man3/shuffle.3' "$man/man3/$s.3" || grep -q "^\.TH" "$man/man3/$s.3" ||
			fail "man3/$s.3 is neither a page nor a .so link"
	done
	say "man pages: shuffled(8), shufflectl(1), shuffle(3) + $(wc -l <<<"$syms") function pages"
else
	say "scdoc not installed: man pages not checked"
fi

if command -v systemd-analyze >/dev/null; then
	# --man=no: man(1) may not be installed; the paths must resolve
	if ! out=$(systemd-analyze verify --man=no "$unit" 2>&1); then
		echo "$out" >&2
		fail "systemd-analyze verify $unit"
	fi
	say "systemd-analyze verify: ok${out:+ ($out)}"
else
	say "systemd-analyze not installed: unit not verified"
fi

for f in "$prefix/sbin/shuffled" "$prefix/bin/shufflectl" "$libdir/libshuffle-client.so.1"; do
	check_ldd "$f"
done

# ---- run it, as WHO ------------------------------------------------------
# The example config with every key uncommented: the installed daemon
# must accept each of them (the command line's runtime dir wins).
conf=$tmp/shuffled.conf
sed -E 's/^# ([a-z_]+ =.*)$/\1/' "$example" >"$conf"
[ "$(grep -cE '^[a-z_]+ =' "$conf")" -ge 20 ] || fail "the example config has few keys"
chmod 644 "$conf"

run_as_user() {
	local who=$1 home=$tmp/home-$1
	mkdir -p "$home"
	[ "$who" = root ] || [ "$who" = self ] || chown "$who:$who" "$home"
	local run_home=$home
	build_app "$who" "$home"
	local rt=$home/run sock=$home/run/shuffled.sock
	# as README.md tells a user to start a daemon of their own
	# shellcheck disable=SC2016 # expanded by the inner shell
	start_bg "$who" PKG_CONFIG_PATH="$pcdir" sh -c 'exec "$(pkg-config --variable=sbindir shuffle-client)/shuffled" "$@"' sh \
		--config="$conf" --runtime-dir="$rt" --node-name=deploy \
		--rendezvous=none --log-file="$home/shuffled.log" >"$home/shuffled.out" 2>&1
	local pid=$bg_pid
	wait_ctl "$who" "$sock" "$pid"
	run_job "$who" "$sock" "$home" 2
	local st
	st=$(run_as "$who" shufflectl -s "$sock" status 2>&1) || {
		echo "$st" >&2
		fail "shufflectl status as $who"
	}
	grep -q deploy <<<"$st" || {
		echo "$st" >&2
		fail "shufflectl status does not show node 'deploy'"
	}
	run_as "$who" shufflectl -s "$sock" --json stats >"$home/stats.json" ||
		fail "shufflectl --json stats as $who"
	local in
	in=$(jq '.clients_total.msgs_in' "$home/stats.json")
	[ "$in" = 4000 ] || fail "as $who: the daemon counted $in messages in, want 4000"
	kill -TERM "$pid"
	local rc=0
	wait "$pid" || rc=$?
	[ $rc = 0 ] || {
		cat "$home/shuffled.out" "$home/shuffled.log" >&2
		fail "shuffled as $who exited $rc after SIGTERM"
	}
	[ -e "$sock" ] && fail "the socket outlived the daemon ($who)"
	say "as $who: daemon, app and shufflectl from the installed tree: ok"
}

if [ "$(id -u)" != 0 ]; then
	run_as_user self
	skip "not root: the run as a second, unprivileged user was not tried"
fi
run_as_user root
id nobody >/dev/null 2>&1 || skip "no user 'nobody'"
run_as_user "$(id -u nobody)"
say "ok"
