"""The clients Graphiti is given: an embedder and a cross-encoder over the packaged MiniLM (offline), and the LLM
client of episode mode through ufuzz's own (cache first)."""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ufuzz.backends.protocol import (
    BackendError,
)

#: MiniLM's vector size
_EMBED_DIM = 384
#: query/passage embeddings kept by the embedder (least recently used dropped; ~12 KB each)
_EMBED_CACHE = 8192



def encode(texts: list[str]) -> list[list[float]]:
    """Each text encoded alone (:func:`ufuzz.backends.embedding.encode_alone`): a batched vector differs from
    the single one in its last bits, by the CPU's kernels, and would make a result depend on what was embedded
    beside it."""
    from ufuzz.backends.embedding import encode_alone

    return [[float(x) for x in v] for v in encode_alone(texts)]


def prompt_digest() -> str | None:
    """sha256 (16 hex digits) of graphiti-core's prompt modules: which prompts an episode-mode run used."""
    try:
        import graphiti_core.prompts as prompts
    except ImportError:
        return None
    h = hashlib.sha256()
    for f in sorted(Path(prompts.__file__).parent.glob("*.py")):
        h.update(f.name.encode("utf-8") + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


class ThroughClient:
    """The part of ``AsyncOpenAI`` that Graphiti's ``OpenAIGenericClient`` uses (``chat.completions.create`` and
    ``close``), answered by ufuzz's LLM client: Graphiti builds every request as it would for the endpoint
    (messages, json_schema ``response_format``, temperature, max_tokens), ufuzz sends it, cache first, so a
    replay or ``corpus check`` of an episode-mode campaign makes no new call. The blocking call runs in a
    thread, so Graphiti's concurrent prompts (one dedupe prompt per fact) stay concurrent."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.chat = self
        self.completions = self

    async def create(self, *, model: str, messages: list[dict[str, Any]], **params: Any) -> Any:
        from types import SimpleNamespace

        text = await asyncio.to_thread(self.client.complete, messages, **params)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text))])

    async def close(self) -> None:
        return None


def make_clients() -> tuple[Any, Any, Any]:
    """The local EmbedderClient, CrossEncoderClient and a no-LLM client (classes built lazily)."""
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.embedder.client import EmbedderClient, EmbedderConfig
    from graphiti_core.llm_client.client import LLMClient
    from graphiti_core.llm_client.config import LLMConfig

    class MiniLMEmbedder(EmbedderClient):
        """all-MiniLM-L6-v2 (384 dims, normalised) through sentence-transformers."""

        def __init__(self) -> None:
            self.config = EmbedderConfig(embedding_dim=_EMBED_DIM)
            self._cache: OrderedDict[str, list[float]] = OrderedDict()

        def _get(self, texts: list[str]) -> list[list[float]]:
            missing = sorted({t for t in texts if t not in self._cache})
            found = dict(zip(missing, encode(missing), strict=True)) if missing else {}
            out = []
            for t in texts:
                v = found.get(t)
                if v is None:
                    v = self._cache[t]
                    self._cache.move_to_end(t)
                out.append(v)
            self._cache.update(found)
            while len(self._cache) > _EMBED_CACHE:
                self._cache.popitem(last=False)
            return out

        async def create(self, input_data: str | list[str] | Iterable[int] | Iterable[Iterable[int]]
                         ) -> list[float]:
            if isinstance(input_data, str):
                text = input_data
            elif isinstance(input_data, list) and input_data and isinstance(input_data[0], str):
                text = input_data[0]
            else:
                raise BackendError("graphiti embedder: only text input is supported")
            return self._get([text])[0]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            return self._get(list(input_data_list))

    class MiniLMCosineRanker(CrossEncoderClient):
        """Stand-in for a cross-encoder (none is available offline): MiniLM cosine of query and passage.
        Sorted by score, ties broken by passage text."""

        def __init__(self, embedder: MiniLMEmbedder) -> None:
            self.embedder = embedder

        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            if not passages:
                return []
            q = self.embedder._get([query])[0]
            vecs = self.embedder._get(list(passages))
            scored = [(p, round(float(sum(a * b for a, b in zip(q, v, strict=True))), 6))
                      for p, v in zip(passages, vecs, strict=True)]
            scored.sort(key=lambda t: (-t[1], t[0]))
            return scored

    class NoLLM(LLMClient):
        """Direct write mode uses no LLM; any call is an adapter fault."""

        def __init__(self) -> None:
            super().__init__(LLMConfig(api_key="unused", model="none"), cache=False)

        async def _generate_response(self, messages: Any, response_model: Any = None, max_tokens: int = 0,
                                     model_size: Any = None, *, model: str | None = None) -> dict[str, Any]:
            raise BackendError("graphiti: an LLM call was made in write_mode=direct (configure llm_base_url "
                               "and write_mode=episode for LLM extraction)")

    embedder = MiniLMEmbedder()
    return embedder, MiniLMCosineRanker(embedder), NoLLM


