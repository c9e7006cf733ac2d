"""Shared fixtures: the shipped default suite and one small real campaign on the embedded backend."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]

# Property tests assert behaviour, never speed: the tests run two to a 2-core machine (scripts/test.sh), so a
# slow example is the machine's load, not a defect. Hypothesis' timing checks (per-example deadline, "data
# generation too slow") would fail a correct test on a busy machine; they are off for every property test.
settings.register_profile(
    "ufuzz", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors])
settings.load_profile("ufuzz")


@pytest.fixture(scope="session")
def default_suite():
    from ufuzz.seeds.io import load_suite

    return load_suite(ROOT / "seeds" / "default.jsonl")


@pytest.fixture(scope="session")
def small_campaign(tmp_path_factory):
    """A real 400-execution campaign on the default suite, embedded dense backend (budget spent)."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    out = tmp_path_factory.mktemp("campaign")
    c = Campaign(CampaignConfig(backend="embedded", budget=400, seed=2, out=str(out)))  # every kind of the suite
    c.run()
    return c
