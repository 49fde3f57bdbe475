#!/usr/bin/env bash
# Run a command with networking disabled (a fresh network namespace that has only loopback), to
# prove that nothing downloads at run time. Used by `make test` and `make demo`.
# Where no network namespace can be made (no root, user namespaces disabled, a container without
# CAP_SYS_ADMIN) this is an ERROR, not a silent fallback: the offline claim would be untested.
# Opt out explicitly with CORPUSMIX_ALLOW_NETWORK=1 (make test ALLOW_NETWORK=1).
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: scripts/offline.sh COMMAND [ARGS...]" >&2
  exit 2
fi
inner='ip link set lo up 2>/dev/null || true; exec "$@"'
if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
  exec unshare -n bash -c "$inner" offline "$@"
elif unshare -rn true 2>/dev/null; then
  # -r maps us to root inside a user namespace: needed by unprivileged users, harmless here
  exec unshare -rn bash -c "$inner" offline "$@"
fi
if [ "${CORPUSMIX_ALLOW_NETWORK:-0}" = "1" ]; then
  echo "offline.sh: WARNING: no network namespace here; CORPUSMIX_ALLOW_NETWORK=1, so running WITH the" \
       "network: this run does not prove that nothing downloads" >&2
  exec "$@"
fi
echo "offline.sh: cannot create a network namespace (unshare -n as root and unshare -rn both failed), so" \
     "the offline run cannot be enforced. Fix: run as root, or enable unprivileged user namespaces" \
     "(sysctl kernel.unprivileged_userns_clone=1), or opt out explicitly with CORPUSMIX_ALLOW_NETWORK=1" \
     "(make test ALLOW_NETWORK=1)" >&2
exit 3
