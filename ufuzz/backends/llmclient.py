"""The LLM client of a backend's LLM mode (mem0 ``infer``, A-Mem with its LLM, Graphiti ``episode``, MemOS
``extract``): the one way an adapter's library reaches a model.

Every adapter with an LLM mode declares the same options (:func:`llm_options`: ``llm_base_url``, ``llm_model``,
``llm_api_key_env``, ``llm_cache``, ``llm_timeout``) and hands its library a thin shim over this client, so each
prompt goes through the ``openai`` client to the configured endpoint, cache first: a replay or a corpus check of the
campaign sends the prompts it sent and gets the same answers without a new request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufuzz.backends.options import Option

__all__ = ["llm_client", "llm_options"]


def llm_options(endpoint: str, mode: str = "") -> tuple[Option, ...]:
    """The options of an adapter's LLM mode, declared once for every adapter: ``endpoint`` says what the endpoint is
    for; ``mode`` names the mode whose calls the cache file holds (e.g. "write_mode=infer")."""
    of = f" of {mode}" if mode else ""
    return (
        Option("llm_base_url", url=True, help=endpoint),
        Option("llm_model", help="model name at llm_base_url"),
        Option("llm_api_key_env", default="OPENAI_API_KEY", help="environment variable holding the API key"),
        Option("llm_cache", path=True, nullable=True,
               help=f"the LLM call cache file{of} (default: ufuzz's own, $UFUZZ_CACHE_DIR or ~/.cache/ufuzz)"),
        Option("llm_timeout", float, default=60.0, min=0.001, help="seconds one LLM call may take"),
    )


def llm_client(settings: Mapping[str, Any]) -> Any:
    """A :class:`ufuzz.llm.LLMClient` (two retries, the option's timeout) over a :class:`ufuzz.llm.CallCache` at
    ``llm_cache`` (None: ufuzz's own cache file), from a backend's checked settings."""
    from ufuzz.llm import CallCache, LLMClient, LLMConfig

    config = LLMConfig(base_url=str(settings["llm_base_url"]), model=str(settings["llm_model"]),
                       api_key_env=settings["llm_api_key_env"], timeout=settings["llm_timeout"], max_retries=2)
    return LLMClient(config, CallCache(settings["llm_cache"]))
