"""The LLM uses' prompts as versioned data, and what a campaign records to reproduce its LLM calls.

Each use (``paraphrase``, ``answer``, ``judge``, ``fields``) has a default system prompt (the class constant in
:mod:`ufuzz.llm.uses`) with a version. A user overrides any of them with ``--prompts DIR``: ``DIR/<use>.txt``
(the system prompt as plain text) or ``DIR/<use>.json`` (``{"version": ..., "system": ...}``). The override's
text travels with the campaign (its judging settings, a regression corpus header), so a replay or a
``corpus check`` asks the same questions; since the prompt is part of every request, a changed prompt is a
different cache key by construction.

:func:`llm_record` is what ``campaign.json`` and a corpus header say about the LLM: model, endpoint kind,
sampling parameters, and each used prompt's version and sha256 — enough to tell two runs' LLM calls apart.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ufuzz.llm.uses import Answerer, FieldExtractor, Judge, ParaphraseRealizer

#: the default prompt of each use and its version (bump the version whenever a default text changes)
DEFAULTS: dict[str, tuple[str, str]] = {
    "paraphrase": ("paraphrase/1", ParaphraseRealizer.SYSTEM),
    "answer": ("answer/1", Answerer.SYSTEM),
    "judge": ("judge/1", Judge.SYSTEM),
    "fields": ("fields/1", FieldExtractor.SYSTEM),
}
#: the sampling parameters every ufuzz LLM use sends (LLMConfig's defaults; nothing else is sent)
SAMPLING = {"temperature": 0.0}
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_prompts(directory: str | Path) -> dict[str, dict[str, str]]:
    """The overrides in ``directory``: ``{use: {"version", "system"}}``. Raises ``ValueError`` naming the file
    for an unknown use, unreadable or empty text, or a malformed JSON prompt."""
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"--prompts {directory}: not a directory")
    out: dict[str, dict[str, str]] = {}
    for path in sorted(root.iterdir()):
        if path.suffix not in (".txt", ".json") or path.name.startswith("."):
            continue
        use = path.stem
        if use not in DEFAULTS:
            raise ValueError(f"{path}: unknown prompt {use!r}; the prompts are {', '.join(DEFAULTS)}")
        if use in out:
            raise ValueError(f"{path}: prompt {use!r} is given twice (.txt and .json)")
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: cannot read: {exc}") from None
        if path.suffix == ".json":
            try:
                d = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
            if not isinstance(d, dict) or set(d) - {"version", "system"} or not isinstance(d.get("system"), str):
                raise ValueError(f'{path}: expected {{"version": "...", "system": "..."}}')
            text, version = d["system"], str(d.get("version") or "")
        else:
            text, version = raw, ""
        if not text.strip():
            raise ValueError(f"{path}: the prompt is empty")
        out[use] = {"version": version or f"custom:{digest(text)[:12]}", "system": text}
    if not out:
        raise ValueError(f"--prompts {directory}: no prompt file (<use>.txt or <use>.json for "
                         f"{', '.join(DEFAULTS)})")
    return out


def system_of(use: str, prompts: dict[str, Any] | None) -> str:
    """The system prompt of ``use``: the override, else the default."""
    over = (prompts or {}).get(use)
    return str(over["system"]) if over else DEFAULTS[use][1]


def prompt_versions(uses: tuple[str, ...] | list[str], prompts: dict[str, Any] | None) -> dict[str, dict[str, str]]:
    """``{use: {"version", "sha256"}}`` of each prompt the configured ``uses`` send."""
    out = {}
    for use in uses:
        if use not in DEFAULTS:
            continue
        over = (prompts or {}).get(use)
        version = str(over["version"]) if over else DEFAULTS[use][0]
        out[use] = {"version": version, "sha256": digest(system_of(use, prompts)),
                    "source": "--prompts" if over else "default"}
    return out


def endpoint_kind(base_url: str | None) -> str | None:
    """``loopback`` for a server on this machine, ``remote`` otherwise (None without an endpoint)."""
    if not base_url:
        return None
    host = (urlparse(str(base_url)).hostname or "").lower()
    return "loopback" if host in _LOOPBACK else "remote"


def llm_record(config: dict[str, Any], backend_info: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """What reproduces a campaign's LLM calls: ufuzz's own uses (model, endpoint kind, sampling, prompts) and
    the backend's LLM mode where it has one (its ``llm_*`` and prompt facts); None when nothing calls an LLM."""
    uses = tuple(config.get("llm_uses") or ())
    out: dict[str, Any] = {}
    if uses:
        out["uses"] = list(uses)
        out["model"] = config.get("llm_model") or "default"
        out["endpoint_kind"] = endpoint_kind(config.get("llm_base_url"))
        out["api"] = "openai-compatible chat completions"
        out["sampling"] = dict(SAMPLING)
        out["prompts"] = prompt_versions(uses, config.get("prompts"))
    info = backend_info or {}
    if info.get("llm_sampling") or info.get("write_mode") in ("infer", "episode", "extract"):
        out["backend"] = {k: v for k, v in sorted(info.items())
                          if (k.startswith("llm") and k not in ("llm_key_env", "llm_key_from_env", "llm_base_url",
                                                                "llm_calls"))
                          or "prompt" in k or k == "write_mode"}
        out["backend"]["endpoint_kind"] = endpoint_kind(info.get("llm_base_url"))
    return out or None
