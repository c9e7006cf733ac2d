"""A campaign's use of an LLM, as recorded: its client (one for every configured use: paraphrase, answer,
judge), what reproducing its calls needs (``campaign.json``) and what its calls cost (``summary.json``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ufuzz.llm.client import client_for, estimate_cost

__all__ = ["llm_client", "llm_facts", "llm_summary"]


def llm_client(config: Any) -> Any:
    """The LLM client of every configured LLM use, or None without any (held to its share of the rate limits:
    the campaign's process lanes each have a client of their own)."""
    from ufuzz.engine.parallel.core import llm_share

    return client_for(config, share=llm_share(config))


def llm_facts(config: Any, backend: Any) -> dict[str, Any] | None:
    """Model, endpoint kind, sampling and prompt versions of every LLM call the campaign makes (its own uses and
    the backend's LLM mode): what reproducing its LLM calls needs."""
    from ufuzz.llm.prompts import llm_record

    try:
        info = backend.describe()
    except Exception:  # noqa: BLE001 - a record only; the campaign's own checks report a broken backend
        info = {}
    return llm_record(asdict(config), info if isinstance(info, dict) else {})


def llm_summary(llm: Any, lanes: dict[str, int], price: tuple[float, float] | None) -> dict[str, Any] | None:
    """The campaign's LLM calls, tokens and estimated cost: its client's and what its process lanes' own
    clients reported (``lanes``); None without an LLM."""
    if llm is None:
        return None
    out: dict[str, Any] = {**llm.stats(), **llm.usage()}
    for k, v in lanes.items():
        if isinstance(out.get(k), int):
            out[k] += v
    out["cost_usd"] = estimate_cost(out, price)
    out["price"] = list(price) if price is not None else None
    return out
