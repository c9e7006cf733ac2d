"""Lanes as Ray actors: a campaign across machines (``--ray-address``).

Each lane is an actor holding a :class:`ufuzz.engine.parallel.core.LaneCore` (one backend instance), placed by Ray with
one CPU each and spread over the cluster's nodes. The campaign drives them exactly as it drives local lanes —
the same batches, the same queue of jobs, results applied in task order — so a Ray run gives the
same campaign and the same failures as one machine with the same seed and ``--batch``.

Only the campaign's own process writes the corpus. A campaign whose lanes run on other machines keeps it in
PostgreSQL (``--db postgresql://…``): a team looks at it from anywhere, and the machine that coordinates is not
the only place a result can be read. ``--ray-address local`` (a cluster this process starts on this machine,
as the tests do) accepts the default SQLite file, as ``--workers N`` does.

Addresses: ``local`` starts a cluster here (stopped with the campaign); ``auto`` joins the cluster started on
this machine with ``ray start``; ``host:port`` is a cluster's GCS address, ``ray://host:port`` its Ray Client
server. A named host and port is checked to answer before Ray is asked (Ray itself waits a minute or more on
an address that does not). Lanes import ufuzz on the nodes: install it there (``pip install 'ufuzz[ray]'``
plus the backend's extra), in the same version.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from ufuzz._util.where import child_pythonpath
from ufuzz.engine.parallel.core import LaneCore, LaneSpec
from ufuzz.engine.parallel.lane import LaneBase, LaneDied
from ufuzz.engine.parallel.process import START_TIMEOUT
from ufuzz.engine.startup import StartError

__all__ = ["LaneActor", "RayConnection", "RayLane", "check_address", "connect"]

#: seconds to wait for a named cluster address to accept a connection
REACH_TIMEOUT = 5.0


def _is_postgres(db: str | None) -> bool:
    return bool(db) and db.split(":", 1)[0].split("+", 1)[0] in ("postgresql", "postgres")


def check_address(address: str, db: str | None) -> None:
    """Raise ValueError (naming the option) for an address that cannot be right, or a corpus that must go to
    PostgreSQL and does not. Contacts nothing."""
    if not address.strip():
        raise ValueError("--ray-address must not be empty: use local, auto, HOST:PORT or ray://HOST:PORT")
    if address != "local" and not _is_postgres(db):
        raise ValueError(f"--ray-address {address}: a campaign whose lanes run on a Ray cluster keeps its corpus in "
                         "PostgreSQL; pass --db postgresql+psycopg://USER@HOST/DB (SQLite is accepted only with "
                         "--ray-address local, a cluster on this machine)")


def _host_port(address: str) -> tuple[str, int] | None:
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def _reachable(address: str) -> None:
    """Raise StartError if a named host:port does not accept a TCP connection."""
    hp = _host_port(address)
    if hp is None:
        return
    try:
        with socket.create_connection(hp, timeout=REACH_TIMEOUT):
            pass
    except OSError as exc:
        raise StartError("--ray-address", f"no Ray cluster answers at {address} ({exc.strerror or exc})") from None


class RayConnection:
    """The campaign's connection to Ray: makes its lanes; closing it disconnects (and stops a cluster the
    campaign started)."""

    def __init__(self, ray: Any, address: str, owned: bool) -> None:
        self.ray = ray
        self.address = address
        self.owned = owned  # this campaign called ray.init (else it reuses the process's connection)

    def lanes(self, spec: LaneSpec, n: int) -> list[RayLane]:
        return [RayLane(i, spec, self.ray) for i in range(n)]

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
        self.owned = False


def connect(address: str, workers: int) -> RayConnection:
    """Connect to (or, for ``local``, start) the cluster; StartError names the option at fault."""
    try:
        import ray
    except ImportError:
        raise StartError("--ray-address", "Ray is not installed: pip install 'ufuzz[ray]'") from None
    owned = False
    if not ray.is_initialized():
        if address != "local":
            _reachable(address)
        env = {"env_vars": {"PYTHONPATH": child_pythonpath()}}
        try:
            if address == "local":
                ray.init(num_cpus=max(workers, os.cpu_count() or 1), include_dashboard=False,
                         log_to_driver=False, runtime_env=env)
            else:
                ray.init(address=address, log_to_driver=False, runtime_env=env)
        except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; all mean "not reachable"
            raise StartError("--ray-address", f"cannot connect to the Ray cluster at {address}: "
                                              f"{type(exc).__name__}: {exc}") from None
        owned = True
    conn = RayConnection(ray, address, owned)
    cpus = float(ray.cluster_resources().get("CPU", 0))
    if cpus < workers:
        conn.close()
        raise StartError("--workers", f"--workers {workers}: the Ray cluster at {address} has {cpus:g} CPUs, and "
                                      "each lane takes one")
    return conn


class LaneActor:
    """The body of a Ray lane: a LaneCore working in a scratch directory on its node."""

    def __init__(self, spec: LaneSpec) -> None:
        sys.path[:] = [p for p in spec.path if p and os.path.isdir(p)] + [p for p in sys.path if p not in spec.path]
        self.dir = tempfile.mkdtemp(prefix="ufuzz-lane-")
        try:
            self.core = LaneCore(spec, Path(self.dir))
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def ready(self) -> bool:
        return True

    def call(self, method: str, args: tuple[Any, ...]) -> Any:
        return getattr(self.core, method)(*args)

    def close(self) -> None:
        try:
            self.core.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class RayLane(LaneBase):
    """A lane as a Ray actor (a :class:`ufuzz.engine.parallel.lane.Lane`)."""

    def __init__(self, index: int, spec: LaneSpec, ray: Any) -> None:
        self.index = index
        self.spec = spec
        self.ray = ray
        self.starts = 0
        self._actor: Any = None
        self._ref: Any = None
        self._broken: str | None = None

    def start(self) -> None:
        cls = self.ray.remote(LaneActor)
        self._actor = cls.options(num_cpus=1, scheduling_strategy="SPREAD", max_restarts=0).remote(self.spec)
        self.starts += 1

    def ready(self) -> None:
        try:
            self.ray.get(self._actor.ready.remote(), timeout=START_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - the actor's constructor failed, or the cluster did
            self.kill()
            raise LaneDied(f"lane {self.index} could not start on the Ray cluster: {_cause(exc)}") from None

    def submit(self, method: str, *args: Any) -> None:
        self._broken = None
        self._ref = None
        try:
            if self._actor is None:
                self.start()
                self.ready()
            self._ref = self._actor.call.remote(method, args)
        except LaneDied as exc:
            self._broken = str(exc)

    def result(self) -> Any:
        if self._broken is not None:
            raise LaneDied(self._broken)
        try:
            return self.ray.get(self._ref)
        except Exception as exc:  # noqa: BLE001 - the actor died (RayActorError) or its call raised
            if isinstance(exc, self.ray.exceptions.RayActorError):
                self.kill()
            raise LaneDied(f"lane {self.index}: {_cause(exc)}") from None

    @staticmethod
    def wait(lanes: list[RayLane], timeout: float) -> list[RayLane]:
        """The lanes of ``lanes`` whose answer is in, waiting up to ``timeout`` seconds for one."""
        broken = [lane for lane in lanes if lane._broken is not None or lane._ref is None]
        if broken or not lanes:
            return broken
        ray = lanes[0].ray
        ready, _ = ray.wait([lane._ref for lane in lanes], num_returns=1, timeout=timeout)
        return [lane for lane in lanes if any(lane._ref == r for r in ready)]

    def kill(self) -> None:
        actor, self._actor = self._actor, None
        if actor is not None:
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone
                pass

    def close(self) -> None:
        if self._actor is None:
            return
        try:
            self.ray.get(self._actor.close.remote(), timeout=120)
        except Exception:  # noqa: BLE001 - best effort
            pass
        self.kill()


def _cause(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"
