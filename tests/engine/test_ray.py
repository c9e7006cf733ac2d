"""Lanes as Ray actors (``--ray-address``) on a local Ray cluster the tests start (2 CPUs, 127.0.0.1).

A campaign whose lanes are Ray actors is the campaign of the same seed and N run with local lane processes,
record by record. From the command line, a second process joins the cluster by its address with the corpus in
a real PostgreSQL server, and finds the same failures; an address nobody answers at is refused naming the
option, with nothing written. Skipped only when Ray is not installed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.test_resume import _corpus
from tests.engine.test_workers import BUDGET, OPTIONS, SEED, _run

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'ufuzz[ray]'")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster (this process is its first driver); its GCS address for other processes."""
    if ray.is_initialized():
        ray.shutdown()
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def seeds_file(tmp_path_factory) -> Path:
    from ufuzz.seeds.io import write_suite
    from ufuzz.seeds.synth import synthesize

    return write_suite(synthesize(personas=3, seed=11), tmp_path_factory.mktemp("seeds") / "suite.jsonl")


@pytest.fixture(scope="module")
def local_two(tmp_path_factory, seeds_file) -> Path:
    out = tmp_path_factory.mktemp("ray") / "local"
    assert _run(out, seeds_file, 2)["status"] == "budget_spent"
    return out


def test_ray_lanes_give_the_campaign_of_local_lanes(cluster, local_two, seeds_file, tmp_path):
    out = tmp_path / "ray"
    summary = _run(out, seeds_file, 2, ray_address="local")  # this process's cluster: SQLite is accepted
    assert summary["status"] == "budget_spent" and summary["errors"] == 0 and summary["ray_address"] == "local"
    expected, got = _corpus(local_two), _corpus(out)
    assert expected["failures"]
    for part in expected:
        assert got[part] == expected[part], part


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "ufuzz", "run", "--quiet", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def pg():
    pytest.importorskip("psycopg", reason="the PostgreSQL driver is missing: pip install 'ufuzz[postgres]'")
    from tests.support.pg_server import find_bindir, running_postgres

    bindir, why = find_bindir()
    if bindir is None:
        pytest.skip(why)
    with running_postgres({}, bindir=bindir) as server:
        yield server


def test_a_second_process_joins_the_cluster_with_the_corpus_in_postgres(cluster, pg, local_two, seeds_file,
                                                                         tmp_path):
    url = pg.create_database("raycorpus")
    out = tmp_path / "joined"
    run = _cli("--seeds", str(seeds_file), "--budget", str(BUDGET), "--seed", str(SEED), "--workers", "2",
               "--opt", f"retrieval={OPTIONS['retrieval']}", "--out", str(out), "--ray-address", cluster,
               "--db", url)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    expected = json.loads((local_two / "summary.json").read_text())
    assert summary["status"] == "budget_spent" and summary["ray_address"] == cluster
    assert summary["failures"] == expected["failures"] and summary["failures"]
    assert not (out / "corpus.sqlite").exists()
    from ufuzz.corpus.store import CorpusStore

    with CorpusStore(url) as s:
        assert len(s.executions(summary["campaign"])) == BUDGET


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_nobody_answers_at_is_refused_naming_the_option(pg, tmp_path):
    url = pg.create_database("unreachable")
    out = tmp_path / "nothing"
    run = _cli("--budget", "5", "--workers", "2", "--out", str(out), "--ray-address", f"127.0.0.1:{_free_port()}",
               "--db", url)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--ray-address" in run.stderr and "no Ray cluster answers" in run.stderr
    assert "Traceback" not in run.stderr
    assert not out.exists()
    from sqlalchemy import create_engine, inspect

    assert not inspect(create_engine(url)).get_table_names()  # nothing written to the corpus either


def test_one_ray_lane_is_the_campaign_of_one_worker(cluster, seeds_file, tmp_path):
    """``--workers 1`` with Ray runs the backend in one actor, step by step: the campaign of ``--workers 1``."""
    one, ray_one = tmp_path / "one", tmp_path / "ray-one"
    _run(one, seeds_file, 1, budget=80)
    assert _run(ray_one, seeds_file, 1, budget=80, ray_address="local")["status"] == "budget_spent"
    expected, got = _corpus(one), _corpus(ray_one)
    for part in expected:
        assert got[part] == expected[part], part
