#!/usr/bin/env bash
# Install what a one-node SLURM cluster needs (slurm/cluster.sh), from Debian packages.
#
#   slurm/install.sh                     # slurmctld slurmd slurm-client munge
#   slurm/install.sh --with-accounting   # + slurmdbd mariadb-server (for sacct)
#
# Idempotent and quiet: when everything is installed it returns at once without touching apt.
# Needs root (or sudo). Package scripts are kept from starting daemons (no systemd in containers):
# slurm/cluster.sh starts them itself, in its own state directory.
set -euo pipefail

packages=(slurmctld slurmd slurm-client munge)
for arg in "$@"; do
    case "$arg" in
        --with-accounting) packages+=(slurmdbd mariadb-server) ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument $arg" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install.sh: needs root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
fi
if ! command -v apt-get >/dev/null; then
    echo "install.sh: no apt-get; install ${missing[*]} with this system's package manager" >&2
    exit 1
fi

echo "install.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when a package has no install candidate (a fresh image has none).
if apt-cache policy "${missing[@]}" 2>/dev/null | grep -q 'Candidate: (none)' \
    || [ "$(apt-cache policy "${missing[@]}" 2>/dev/null | grep -c 'Candidate:')" -lt ${#missing[@]} ]; then
    "${SUDO[@]}" apt-get update -qq
fi

# Keep maintainer scripts from starting munge/slurm/mariadb services (exit 101 = "not allowed").
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
    "${SUDO[@]}" chmod +x "$policy"
    made_policy=1
fi
cleanup() { [ "$made_policy" = 1 ] && "${SUDO[@]}" rm -f "$policy"; return 0; }
trap cleanup EXIT

log=$(mktemp /tmp/candlebench-slurm-install.XXXXXX.log)
if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends \
    -o Dpkg::Use-Pty=0 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "install.sh: apt-get install failed (full log: $log)" >&2
    exit 1
fi
rm -f "$log"
echo "install.sh: done ($(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null || echo '?'))" >&2
