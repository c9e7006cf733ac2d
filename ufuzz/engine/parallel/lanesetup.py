"""Which lanes a campaign runs, and starting them: the one place that maps ``--workers``,
``--max-concurrency`` and ``--ray-address`` to kinds of :class:`ufuzz.engine.parallel.lane.Lane`.

=====================================  ==========================================================================
settings                               lanes
=====================================  ==========================================================================
``--workers 1``                        one :class:`~ufuzz.engine.parallel.lane.InProcessLane` over the campaign's backend
``--max-concurrency M``                M :class:`~ufuzz.engine.parallel.threadlanes.ThreadLane` over the campaign's backend
``--workers N``                        N :class:`~ufuzz.engine.parallel.process.ProcessLane`, a backend each
``--workers N --max-concurrency M``    N processes of M thread lanes (:func:`~ufuzz.engine.parallel.threadlanes.slot_lanes`)
``--ray-address A --workers N``        N :class:`~ufuzz.engine.parallel.raylanes.RayLane` actors, a backend each
=====================================  ==========================================================================

Every kind runs the same jobs (:class:`ufuzz.engine.parallel.core.LaneCore`) from the same pool, and the batches are
``--batch`` tasks whatever the lanes (:mod:`ufuzz.engine.parallel.batching`), so the same seed and batch give the same
campaign with any of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ufuzz.backends.protocol import BackendUnavailable
from ufuzz.engine.parallel.core import LaneCore, LaneSpec
from ufuzz.engine.parallel.lane import InProcessLane, Lane, LaneDied
from ufuzz.engine.parallel.pool import LanePool
from ufuzz.engine.parallel.process import ProcessLane

__all__ = ["lane_count", "start_lanes"]


def lane_count(config: Any) -> int:
    """Lanes of a campaign (``--workers`` × ``--max-concurrency``): how many tasks of a batch run at once."""
    return config.workers * config.max_concurrency


def start_lanes(spec: LaneSpec, workdir: Path, *, backend: Any, llm: Any, ray: Any = None) -> LanePool:
    """The campaign's lanes, started (each that builds its own backend fails here, cleanly, on a bad option:
    BackendUnavailable). ``backend`` and ``llm`` are the campaign's own, which in-process and thread lanes share;
    ``ray`` the campaign's Ray connection, if any."""
    cfg = spec.config
    if ray is not None:
        lanes: list[Lane] = list(ray.lanes(spec, cfg.workers))
    elif cfg.max_concurrency > 1 and cfg.workers > 1:  # N processes of M thread lanes each
        from ufuzz.engine.parallel.threadlanes import slot_lanes

        lanes = list(slot_lanes(spec, workdir, cfg.workers, cfg.max_concurrency))
    elif cfg.max_concurrency > 1:
        lanes = _thread_lanes(spec, workdir, backend, llm)
    elif cfg.workers == 1:  # nothing would overlap: the lane's work is done when its answer is asked for
        lanes = [InProcessLane(0, LaneCore(spec, workdir / "lane0", backend=backend, llm=llm, prejudge=False))]
    else:
        lanes = [ProcessLane(i, spec, workdir / f"lane{i}") for i in range(cfg.workers)]
    pool = LanePool(lanes)
    try:
        pool.start()
    except LaneDied as exc:
        raise BackendUnavailable(str(exc)) from None
    return pool


def _thread_lanes(spec: LaneSpec, workdir: Path, backend: Any, llm: Any) -> list[Lane]:
    """``--max-concurrency N`` thread lanes over the campaign's backend and LLM client."""
    from ufuzz.engine.executor import SharedStates
    from ufuzz.engine.parallel.threadlanes import ThreadLane, shareable

    shared = shareable(backend)
    states = SharedStates(shared)  # checkpoint states, built once for all lanes
    signal = threading.Condition()

    def core(i: int) -> Callable[[], Any]:
        return lambda: LaneCore(spec, workdir / f"lane{i}", backend=shared, llm=llm, shared=states)

    lanes = [ThreadLane(i, core(i), signal) for i in range(spec.config.max_concurrency)]
    lanes[-1].after_close = states.close  # the pool closes lanes in order: the last releases the shared states
    return lanes
