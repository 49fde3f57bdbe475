"""Start and stop a Spark standalone cluster (one master, N workers) with pyspark's own scripts.

Used by the cluster test and for trying ``spark-submit --master spark://...`` on one machine::

    from curate.spark.cluster import standalone_cluster
    with standalone_cluster(workers=2) as cluster:
        print(cluster.master_url)          # spark://127.0.0.1:7077
    # the master and the workers are stopped here, whatever happened inside the block

The pyspark wheel ships ``sbin/spark-daemon.sh`` (what Spark's ``start-master.sh`` /
``start-worker.sh`` call) and ``bin/spark-class``; each daemon gets private log, pid and work
folders, so stopping touches only the processes this cluster started (their pid files).
Readiness is read from the master's JSON status page (``/json/``: ``aliveworkers``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from corpusmix.logging import get_logger
from corpusmix.procs import pid_alive

log = get_logger("curate.spark_cluster")

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """SPARK_HOME of the installed pyspark (or ``$SPARK_HOME`` when it has ``sbin/spark-daemon.sh``)."""
    env = os.environ.get("SPARK_HOME")
    if env and (Path(env) / "sbin" / "spark-daemon.sh").exists():
        return Path(env)
    try:
        import pyspark
    except ImportError as exc:
        raise RuntimeError("pyspark is not installed; pip install 'corpusmix[spark]'") from exc
    home = Path(pyspark.__file__).parent
    if not (home / "sbin" / "spark-daemon.sh").exists():
        raise RuntimeError(f"{home} has no sbin/spark-daemon.sh; set SPARK_HOME to a Spark distribution")
    return home


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


@dataclass
class StandaloneCluster:
    """A running (or stopped) standalone cluster on one host."""

    host: str
    port: int
    webui_port: int
    workers: int
    root: Path
    env: dict[str, str] = field(repr=False, default_factory=dict)
    started: list[tuple[str, int]] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://{self.host}:{self.webui_port}/json/", timeout=5) as r:
            return json.loads(r.read().decode())

    def logs(self, tail: int = 40) -> str:
        """The last lines of every daemon log (for error messages)."""
        out = []
        for p in sorted((self.root / "logs").glob("*.out")):
            lines = p.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"--- {p.name}\n" + "\n".join(lines))
        return "\n".join(out)

    def _daemon(self, action: str, cls: str, instance: int, *args: str, timeout: float = 60) -> None:
        cmd = [str(spark_home() / "sbin" / "spark-daemon.sh"), action, cls, str(instance), *args]
        subprocess.run(cmd, env=self.env, check=True, timeout=timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)

    def _pid(self, cls: str, instance: int) -> int | None:
        for p in (self.root / "pids").glob(f"spark-*-{cls}-{instance}.pid"):
            try:
                return int(p.read_text().strip())
            except ValueError:
                return None
        return None

    def start(self, *, cores: int = 1, memory: str = "512m", timeout: float = 120) -> None:
        """Start the master, then the workers; wait until all workers are registered."""
        self._daemon("start", MASTER_CLASS, 1, "--host", self.host, "--port", str(self.port),
                     "--webui-port", str(self.webui_port))
        self.started.append((MASTER_CLASS, 1))
        for i in range(1, self.workers + 1):
            work = self.root / f"work-{i}"
            work.mkdir(parents=True, exist_ok=True)
            self._daemon("start", WORKER_CLASS, i, "--host", self.host, "--webui-port", str(free_port(self.host)),
                         "--cores", str(cores), "--memory", memory, "--work-dir", str(work), self.master_url)
            self.started.append((WORKER_CLASS, i))
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                st = self.status()
                last = st
                if st.get("status") == "ALIVE" and st.get("aliveworkers", 0) >= self.workers:
                    log.info("standalone cluster up", extra={"data": {"master": self.master_url,
                                                                     "workers": st["aliveworkers"]}})
                    return
            except OSError as exc:
                last = exc
            time.sleep(1.0)
        raise TimeoutError(f"the standalone cluster did not come up in {timeout:.0f} s (last status: {last});"
                           f" daemon logs:\n{self.logs()}")

    def stop(self, *, timeout: float = 30) -> None:
        """Stop every daemon this cluster started (workers first); SIGKILL what outlives ``timeout``."""
        for cls, i in reversed(self.started):
            pid = self._pid(cls, i)
            try:
                self._daemon("stop", cls, i, timeout=timeout)
            except (subprocess.SubprocessError, OSError) as exc:
                log.warning("spark-daemon.sh stop failed", extra={"data": {"class": cls, "error": str(exc)}})
            if pid is not None:
                _wait_or_kill(pid, timeout)
        self.started.clear()


def _wait_or_kill(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid_alive(pid):
        log.warning("daemon outlived stop; killing it", extra={"data": {"pid": pid}})
        os.kill(pid, signal.SIGKILL)


@contextmanager
def standalone_cluster(*, workers: int = 2, cores: int = 1, memory: str = "512m", host: str = "127.0.0.1",
                       port: int = 7077, root: str | Path | None = None, timeout: float = 120
                       ) -> Iterator[StandaloneCluster]:
    """A master and ``workers`` workers on ``host``; always stopped on exit (even on errors/timeouts).

    ``port`` 7077 is used when free, otherwise a free port (``cluster.master_url`` tells which).
    """
    home = spark_home()
    tmp = None
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="corpusmix-spark-")
        root = tmp.name
    root = Path(root)
    for d in ("logs", "pids"):
        (root / d).mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(root / "logs"), "SPARK_PID_DIR": str(root / "pids"),
        "SPARK_LOCAL_IP": host, "SPARK_MASTER_HOST": host, "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_IDENT_STRING": "corpusmix",
        # no REST submission server (another port to collide on); the web UI gives readiness
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    })
    env.pop("SPARK_NO_DAEMONIZE", None)
    cluster = StandaloneCluster(host=host, port=port if port_free(port, host) else free_port(host),
                                webui_port=free_port(host), workers=workers, root=root, env=env)
    try:
        cluster.start(cores=cores, memory=memory, timeout=timeout)
        yield cluster
    finally:
        cluster.stop()
        if tmp is not None:
            tmp.cleanup()
