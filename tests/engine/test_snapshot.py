"""Resume snapshots: known objects travel as names, everything else round-trips, bad snapshots are refused."""

from __future__ import annotations

import pickle
import zlib
from dataclasses import dataclass

import pytest

from ufuzz.engine.snapshot import FORMAT, SnapshotError, dump, format_of, load


@dataclass
class Big:
    text: str


def test_known_objects_are_written_as_names_and_come_back_as_the_same_objects():
    seed = Big("x" * 5000)
    state = {"cases": {"a": seed, "b": Big("mutant")}, "again": [seed], "n": 3}
    data = dump(state, {"seed:a": seed})
    assert b"x" * 100 not in zlib.decompress(data)  # the seed's content is not in the snapshot
    back = load(data, {"seed:a": seed})
    assert back["cases"]["a"] is seed and back["again"][0] is seed
    assert back["cases"]["b"] == Big("mutant") and back["n"] == 3


def test_a_snapshot_naming_an_object_the_campaign_lacks_is_refused():
    seed = Big("s")
    data = dump({"cases": [seed]}, {"seed:a": seed})
    with pytest.raises(SnapshotError, match="seed:a"):
        load(data, {})


def test_other_formats_and_damage_are_refused():
    old = zlib.compress(pickle.dumps({"format": FORMAT - 1, "step": 1}))
    with pytest.raises(SnapshotError, match="format"):
        load(old)
    with pytest.raises(SnapshotError, match="cannot be read"):
        load(b"not a snapshot")


def test_the_format_is_read_from_the_first_bytes_without_unpickling():
    seed = Big("s")
    assert format_of(dump({"cases": [seed]}, {"seed:a": seed})) == FORMAT  # a known object is never resolved
    assert format_of(zlib.compress(pickle.dumps({"format": FORMAT - 1, "step": 1}))) == FORMAT - 1
    assert format_of(zlib.compress(pickle.dumps({"step": 1}))) is None
    assert format_of(b"not a snapshot") is None


def test_resume_refuses_a_snapshot_of_another_format_before_anything_opens(tmp_path, monkeypatch):
    from ufuzz.engine import snapshot
    from ufuzz.engine.campaign import Campaign, CampaignConfig, ResumeError
    from ufuzz.seeds.synth import synthesize

    out = tmp_path / "c"
    monkeypatch.setattr(snapshot, "FORMAT", FORMAT - 1)  # as an older ufuzz wrote it
    cfg = CampaignConfig(backend="embedded", backend_options={"retrieval": "bm25"}, budget=6, seed=1, out=str(out),
                         max_time=60)
    Campaign(cfg, suite=synthesize(personas=1, seed=2)).run()
    monkeypatch.undo()
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(ResumeError, match=f"format {FORMAT - 1}, and this ufuzz resumes format {FORMAT} only"):
        Campaign.resume(out, budget=12)
    assert sorted(p.name for p in out.iterdir()) == before
