"""Process liveness, shared by the Spark cluster's shutdown and the decontamination index's cleanup."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Is process ``pid`` running? A zombie (exited, not yet reaped) counts as gone; a process of
    another user (no permission to signal it) as running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True
