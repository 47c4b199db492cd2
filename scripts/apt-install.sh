#!/usr/bin/env bash
# Installs Debian packages for the test scripts, the one way they get root:
# as root directly, else through sudo (which may ask for a password); with
# neither it fails with a message saying what to install by hand. Only
# what the packages need (--no-install-recommends), waiting up to 10 min
# for another apt to release its lock. apt's own output goes to a log file
# (under ${TMPDIR:-/tmp}): one line says what is installed, and on failure
# the log's last lines are printed and its path named. Output goes to stderr.
#
#   scripts/apt-install.sh redis-server chromium
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: scripts/apt-install.sh package..." >&2; exit 2; }
if ! command -v apt-get >/dev/null; then
  echo "apt-install: no apt-get here (the test scripts install on Debian and Ubuntu only); install by hand: $*" >&2
  exit 1
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "apt-install: installing $* needs root: run as root, install sudo, or install the packages by hand" >&2
    exit 1
  fi
  as_root=(sudo)
fi
log=$(mktemp "${TMPDIR:-/tmp}/apt-install.XXXXXX")
echo "apt-install: installing $* (apt-get${as_root:+, through sudo}; its output in $log)" >&2
if ! { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout=600 &&
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "$@"; } >"$log" 2>&1 </dev/null; then
  echo "apt-install: installing $* FAILED; the last lines of apt's output (all of it: $log):" >&2
  tail -n 30 "$log" | sed 's/^/  | /' >&2
  exit 1
fi
rm -f "$log"
echo "apt-install: installed $*" >&2
