#!/bin/sh
# check-units.sh - offline checks of systemd/weavedid.service and systemd/weavedid.socket.
#
#   1. systemd-analyze verify: must print nothing (verify exits 0 even on many warnings,
#      e.g. unknown keys or unparsable values, so its output is what is checked).
#   2. systemd-analyze security --offline=yes: overall exposure must be <= 2.0.
#   3. sysusers.d/weavedi.conf and tmpfiles.d/weavedi.conf applied in the throw-away root
#      (systemd-sysusers --root=, systemd-tmpfiles --create --root=): each directory the
#      service's RuntimeDirectory= and StateDirectory= name must come out as the unit makes
#      it (mode RuntimeDirectoryMode= / StateDirectoryMode=, owner User=:Group=), so that it
#      is there as the service would have it before the first start (weavedid.socket, and
#      `weavedid --check-config` run as the service's user). Needs root (the owners); skipped,
#      and said so, without.
#
# Works without a running systemd (e.g. in a container whose PID 1 is not systemd).
# verify checks that ExecStart=/ExecReload= binaries exist; /usr/bin/weavedid is usually not
# installed where this runs, so the units are verified inside a throw-away root (--root=):
# a copy of the host's /usr/lib/systemd/system (so sysinit.target, sockets.target, ... resolve),
# the two units unmodified in <root>/etc/systemd/system, and stub executables at
# <root>/usr/bin/weavedid and <root>/usr/bin/weavedictl (<root>/bin -> usr/bin).
#
# Usage: systemd/check-units.sh [UNIT_DIR]   (default: the directory of this script)
# Env:   MAX_EXPOSURE (default 2.0), SYSTEMD_UNIT_DIR (default /usr/lib/systemd/system)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
unit_dir=${1:-$here}
max_exposure=${MAX_EXPOSURE:-2.0}
host_units=${SYSTEMD_UNIT_DIR:-/usr/lib/systemd/system}
[ -d "$host_units" ] || host_units=/lib/systemd/system

command -v systemd-analyze >/dev/null || { echo "check-units: systemd-analyze not found" >&2; exit 2; }
for u in weavedid.service weavedid.socket; do
    [ -f "$unit_dir/$u" ] || { echo "check-units: missing $unit_dir/$u" >&2; exit 2; }
done

root=$(mktemp -d "${TMPDIR:-/tmp}/weavedi-units.XXXXXX")
trap 'rm -rf "$root"' EXIT INT TERM

mkdir -p "$root/etc/systemd/system" "$root/usr/bin" "$root/usr/lib/systemd"
cp -a "$host_units" "$root/usr/lib/systemd/system"
ln -s usr/bin "$root/bin"
ln -s usr/lib "$root/lib"
for exe in weavedid weavedictl; do
    printf '#!/bin/sh\nexit 0\n' >"$root/usr/bin/$exe"
    chmod 0755 "$root/usr/bin/$exe"
done
cp "$unit_dir/weavedid.service" "$unit_dir/weavedid.socket" "$root/etc/systemd/system/"

status=0
systemd-analyze --version | head -n 1

echo "== systemd-analyze verify --root=<tmp> --man=no --generators=no weavedid.service weavedid.socket"
set +e
verify_out=$(systemd-analyze verify --root="$root" --man=no --generators=no \
                 weavedid.service weavedid.socket 2>&1)
verify_rc=$?
set -e
[ -n "$verify_out" ] && printf '%s\n' "$verify_out"
if [ "$verify_rc" -ne 0 ] || [ -n "$verify_out" ]; then
    echo "verify: FAILED (exit $verify_rc, $(printf '%s\n' "$verify_out" | grep -c .) line(s) of output)"
    status=1
else
    echo "verify: OK (exit 0, no output)"
fi

echo "== systemd-analyze security --offline=yes --no-pager $unit_dir/weavedid.service"
set +e
sec_out=$(systemd-analyze security --offline=yes --no-pager "$unit_dir/weavedid.service" 2>&1)
sec_rc=$?
set -e
printf '%s\n' "$sec_out"
# "→ Overall exposure level for weavedid.service: 0.4 SAFE 😀"
exposure=$(printf '%s\n' "$sec_out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p' | tail -n 1)
if [ "$sec_rc" -ne 0 ] || [ -z "$exposure" ]; then
    echo "security: FAILED (exit $sec_rc, exposure not found)"
    status=1
elif awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e + 0 > m + 0) }'; then
    echo "security: FAILED (exposure $exposure > $max_exposure)"
    status=1
else
    echo "security: OK (exposure $exposure <= $max_exposure)"
fi

echo "== systemd-sysusers + systemd-tmpfiles --create --root=<tmp> weavedi.conf"
# The unit's value of KEY (its last assignment).
unit_value() { sed -n "s/^$1=//p" "$unit_dir/weavedid.service" | tail -n 1; }
sysusers_conf=$(cd "$unit_dir/sysusers.d" 2>/dev/null && pwd)/weavedi.conf
tmpfiles_conf=$(cd "$unit_dir/tmpfiles.d" 2>/dev/null && pwd)/weavedi.conf
if [ "$(id -u)" -ne 0 ]; then
    echo "tmpfiles: skipped (not root: the directories' owners cannot be set)"
elif ! command -v systemd-sysusers >/dev/null || ! command -v systemd-tmpfiles >/dev/null; then
    echo "tmpfiles: skipped (systemd-sysusers or systemd-tmpfiles not found)"
elif [ ! -f "$sysusers_conf" ] || [ ! -f "$tmpfiles_conf" ]; then
    echo "tmpfiles: FAILED (missing $sysusers_conf or $tmpfiles_conf)"
    status=1
else
    tmp_status=0
    mkdir -p "$root/run" "$root/var/lib"
    if ! systemd-sysusers --root="$root" "$sysusers_conf" \
        || ! systemd-tmpfiles --root="$root" --create "$tmpfiles_conf"; then
        echo "tmpfiles: FAILED (systemd-sysusers or systemd-tmpfiles failed)"
        tmp_status=1
    fi
    user=$(unit_value User); group=$(unit_value Group)
    uid=$(awk -F: -v n="$user" '$1 == n { print $3 }' "$root/etc/passwd" 2>/dev/null)
    gid=$(awk -F: -v n="$group" '$1 == n { print $3 }' "$root/etc/group" 2>/dev/null)
    for kind in Runtime:/run State:/var/lib; do
        key=${kind%%:*}Directory; base=${kind#*:}
        name=$(unit_value "$key"); mode=$(unit_value "${key}Mode")
        [ -n "$mode" ] || mode=0755
        dir="$base/$name"
        if [ -z "$name" ]; then
            echo "tmpfiles: FAILED (the service sets no $key=)"
            tmp_status=1
            continue
        fi
        found=$(stat -c '%a %u %g' "$root$dir" 2>/dev/null || echo missing)
        want="$(printf '%o' "0$mode") $uid $gid"
        if [ "$found" != "$want" ]; then
            echo "tmpfiles: FAILED ($dir is '$found', the unit's $key= makes it '$want' (mode, uid of $user, gid of $group))"
            tmp_status=1
        else
            echo "tmpfiles: $dir as $key= makes it (mode $mode, $user:$group)"
        fi
    done
    if [ "$tmp_status" -eq 0 ]; then
        echo "tmpfiles: OK"
    else
        status=1
    fi
fi

exit $status
