"""The LLM layer: one OpenAI-compatible client with a persistent call cache, and the four LLM uses."""

from ufuzz.llm.cache import CallCache, cache_clear, cache_key, cache_stats, default_cache_path
from ufuzz.llm.client import LLMClient, LLMConfig, LLMError
from ufuzz.llm.uses import (
    IDK,
    LABELS,
    TRANSFORMATIONS,
    Answerer,
    FieldExtractor,
    Judge,
    Judgement,
    ParaphraseRealizer,
    apply_rubric,
)

__all__ = [
    "IDK", "LABELS", "TRANSFORMATIONS", "Answerer", "CallCache", "FieldExtractor", "Judge", "Judgement",
    "LLMClient", "LLMConfig", "LLMError", "ParaphraseRealizer", "apply_rubric", "cache_clear", "cache_key",
    "cache_stats", "default_cache_path",
]
