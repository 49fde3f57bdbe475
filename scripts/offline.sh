#!/usr/bin/env bash
# Run a command with networking disabled (a fresh network namespace that has only loopback), to
# prove that nothing downloads at run time. Used by `make test` and `make demo`.
# Falls back to running the command as is (with a warning) where namespaces are unavailable;
# set CORPUSMIX_REQUIRE_OFFLINE=1 to make that fallback an error instead.
set -euo pipefail
inner='ip link set lo up 2>/dev/null || true; exec "$@"'
if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
  exec unshare -n bash -c "$inner" offline "$@"
elif unshare -rn true 2>/dev/null; then
  exec unshare -rn bash -c "$inner" offline "$@"
fi
if [ "${CORPUSMIX_REQUIRE_OFFLINE:-0}" = "1" ]; then
  echo "offline.sh: cannot create a network namespace here (unshare -n / -rn failed)" >&2
  exit 1
fi
echo "offline.sh: network namespaces unavailable; running with the network as is" >&2
exec "$@"
