"""Shared fixtures: the shipped default suite and one small real campaign on the embedded backend."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def default_suite():
    from ufuzz.seeds.io import load_suite

    return load_suite(ROOT / "seeds" / "default.jsonl")


@pytest.fixture(scope="session")
def small_campaign(tmp_path_factory):
    """A real 400-execution campaign on the default suite, embedded dense backend (budget spent)."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    out = tmp_path_factory.mktemp("campaign")
    c = Campaign(CampaignConfig(backend="embedded", budget=400, seed=3, out=str(out)))
    c.run()
    return c
