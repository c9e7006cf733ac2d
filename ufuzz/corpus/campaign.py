"""Reading a campaign back from its corpus database: the data replay, export and triage start from.

:func:`load_campaign` reads the corpus and the oracle side's tables once and closes them; :func:`case_of`
rebuilds a seed or a recorded mutant as a :class:`~ufuzz.model.FuzzCase` from the stored recipe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ufuzz._util.strict import OpenModel, Text, first_error
from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore, database_errors
from ufuzz.model import Checkpoint, FuzzCase, MutationDescriptor, Provenance, Reference

__all__ = ["CampaignData", "load_campaign", "directory_campaign", "resolve_campaign", "case_of",
           "select_failures"]


def _default_db(campaign_dir: Path) -> str:
    path = campaign_dir / "corpus.sqlite"
    if not path.is_file():
        raise FileNotFoundError(f"{campaign_dir}: no corpus.sqlite in this directory (is it a campaign "
                                "directory? pass --db URL if the corpus is elsewhere)")
    return f"sqlite:///{path.resolve()}"


CampaignId = Text(512)


class CampaignFile(OpenModel):
    """``campaign.json``: which campaign of the (possibly shared) corpus database a directory holds."""

    campaign: CampaignId


def directory_campaign(campaign_dir: Path) -> str | None:
    """The campaign id ``campaign_dir/campaign.json`` names (written when the campaign starts), or None when
    the directory has none. Raises ``ValueError`` naming the file when it is unreadable or malformed: a
    directory that says which campaign it holds is never silently read as another one."""
    path = Path(campaign_dir) / "campaign.json"
    if not path.exists():
        return None
    try:
        return CampaignFile.model_validate_json(path.read_bytes()).campaign
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValidationError as exc:
        where, message = first_error(exc)
        if exc.errors()[0]["type"] == "json_invalid":
            message = f"not valid JSON ({exc.errors()[0].get('ctx', {}).get('error', 'invalid')})"
            where = ""
        raise ValueError(f"{path}: {message}" + (f" (field '{where}')" if where else "")) from None


def resolve_campaign(store: Any, campaign_dir: Path) -> str:
    """The campaign of ``campaign_dir``: the one its campaign.json names (which must be in the store), else
    the id in its summary.json, else the latest one in the store whose configured ``out`` is this directory,
    else the only/latest campaign of the store. ``ValueError`` for a malformed campaign.json, one naming a
    campaign the store does not hold, and a store without campaigns."""
    named = directory_campaign(campaign_dir)
    if named is not None:
        if store.campaign(named) is None:
            raise ValueError(f"{Path(campaign_dir) / 'campaign.json'} names campaign {named!r}, which is not in "
                             f"{store.url} (pass --db with the database it was run on)")
        return named
    summary = campaign_dir / "summary.json"
    if summary.is_file():
        try:
            cid = json.loads(summary.read_text(encoding="utf-8")).get("campaign")
        except (OSError, ValueError, AttributeError):
            cid = None
        if isinstance(cid, str) and cid and store.campaign(cid) is not None:
            return cid
    camps = store.campaigns()
    if not camps:
        raise ValueError(f"the corpus database {store.url} holds no campaign")
    here = campaign_dir.resolve()
    mine = [c for c in camps if c.config.get("out") and Path(c.config["out"]).resolve() == here]
    return (mine or camps)[-1].id


def _backend_options(config: dict[str, Any]) -> dict[str, Any]:
    # options starting with "_" are engine-side objects (e.g. a realizer), not backend settings
    return {k: v for k, v in dict(config.get("backend_options") or {}).items() if not str(k).startswith("_")}


@dataclass
class CampaignData:
    """Everything a replay needs from a campaign's corpus database (read once, then closed)."""

    campaign_id: str
    url: str
    config: dict[str, Any]
    backend_info: dict[str, Any]  # the campaign backend's ``describe()``
    backend: str
    backend_options: dict[str, Any]
    k: int
    checkpoints: dict[str, Checkpoint]
    seeds: dict[str, Any]
    mutants: dict[str, Any]
    failures: list[Any]  # FailureRecord, discovery order
    references: dict[str, Reference]


def load_campaign(campaign_dir: str | Path, db: str | None = None, *,
                  campaign_id: str | None = None) -> CampaignData:
    """Read the campaign in ``campaign_dir`` (corpus and oracle side). ``db`` is the corpus's SQLAlchemy URL
    (default: the directory's corpus.sqlite), opened read-only: reading writes nothing. Raises
    ``FileNotFoundError``/``ValueError`` naming the directory, file or URL for bad input."""
    cdir = Path(campaign_dir)
    if not cdir.is_dir():
        raise FileNotFoundError(f"{cdir}: no such campaign directory")
    url = _default_db(cdir) if db is None else db
    with database_errors(url):
        return _load(cdir, url, campaign_id)


def _load(cdir: Path, url: str, campaign_id: str | None) -> CampaignData:
    store = CorpusStore(url, readonly=True)
    try:
        cid = campaign_id or resolve_campaign(store, cdir)
        record = store.campaign(cid)
        if record is None:
            raise ValueError(f"unknown campaign {cid!r} in {store.url}")
        checkpoints = store.checkpoints(cid)
        seeds = {s.id: s for s in store.seeds(cid)}
        mutants = {m.case_id: m for m in store.mutants(cid)}
    finally:
        store.close()
    with FailureStore(url, cid, readonly=True) as fstore:
        failures = fstore.failures()
        refs = fstore.references()
    config = record.config
    return CampaignData(campaign_id=cid, url=url, config=config, backend_info=dict(record.backend),
                        backend=str(config.get("backend") or record.backend.get("backend") or ""),
                        backend_options=_backend_options(config), k=int(config.get("k") or 5),
                        checkpoints=checkpoints, seeds=seeds, mutants=mutants, failures=failures,
                        references=refs)


def case_of(case_id: str, checkpoints: dict[str, Checkpoint], seeds: dict[str, Any],
             mutants: dict[str, Any]) -> FuzzCase | str:
    """The FuzzCase of a seed or a recorded mutant, or a string saying why it cannot be rebuilt."""
    if case_id in mutants:
        m = mutants[case_id]
        if m.query is None:
            return f"case {case_id} was rejected before a mutant existed"
        seed = seeds.get(m.seed_id)
        cp_id = m.checkpoint_id or (seed.checkpoint_id if seed else None)
        if cp_id not in checkpoints:
            return f"checkpoint {cp_id!r} of case {case_id} is not in the corpus"
        descriptor = seed.descriptor if seed else MutationDescriptor()
        return FuzzCase(id=m.case_id, seed_id=m.seed_id, checkpoint_id=cp_id, query=m.query,
                        descriptor=descriptor, provenance=Provenance.of(checkpoints[cp_id]), ops=m.ops,
                        parent_id=m.parent_id, operator=m.operator, depth=m.depth, detail=m.detail)
    if case_id in seeds:
        s = seeds[case_id]
        if s.checkpoint_id not in checkpoints:
            return f"checkpoint {s.checkpoint_id!r} of seed {case_id} is not in the corpus"
        return FuzzCase.from_seed(s, checkpoints[s.checkpoint_id])
    return f"case {case_id} is neither a recorded mutant nor a seed"


def select_failures(failures: list[Any], keys: list[str] | tuple[str, ...] | None) -> list[Any]:
    """The failures whose key starts with one of ``keys`` (all when None). A prefix that matches no failure or
    several raises ``ValueError`` naming it (like a short git hash)."""
    if keys is None:
        return list(failures)
    chosen: list[Any] = []
    for k in keys:
        hits = [f for f in failures if f.failure_key.startswith(k)]
        if not hits:
            raise ValueError(f"no failure with key {k!r} in this campaign (`ufuzz failures list DIR` lists them)")
        if len(hits) > 1:
            raise ValueError(f"key prefix {k!r} matches {len(hits)} failures; give more characters")
        if hits[0] not in chosen:
            chosen.append(hits[0])
    return chosen
