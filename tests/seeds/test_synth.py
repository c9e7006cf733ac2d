"""Synthetic seed suite: determinism, provenance agreement, descriptor hygiene, pools, file round trip."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.model import Provenance, QueryFields, SeedSuite
from ufuzz.seeds import pools
from ufuzz.seeds.io import SeedFileError, load_suite, write_suite
from ufuzz.seeds.synth import STATEMENTS, header, synthesize, write_synthetic
from ufuzz.seeds.wording import ATTRIBUTES, CONTEXTS, FORMS, attributes_for, fields_of, realize, template_ids

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "seeds" / "default.jsonl"


@pytest.fixture(scope="module")
def suite() -> SeedSuite:
    return synthesize(personas=12, seed=7)


def _texts(cp) -> list[str]:
    return [m.text.lower() for m in cp.memories]


def _all_descriptor_strings(desc) -> list[str]:
    out = list(desc.value_pool)
    for group in (desc.replacement_targets, desc.absent_targets):
        for vals in group.values():
            out.extend(vals)
    return out


def check_suite_invariants(s: SeedSuite) -> None:
    """Invariants every synthetic suite satisfies (used on the default suite and on random ones)."""
    assert s.seeds
    seen_qids = set()
    for cp in s.checkpoints.values():
        n = cp.id[1:]
        assert re.fullmatch(r"p\d+", cp.id)
        assert [m.id for m in cp.memories] == [f"p{n}-m{k}" for k in range(1, len(cp.memories) + 1)]
        stamps = [m.timestamp for m in cp.memories]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        assert 25 <= len(cp.memories) <= 50, (cp.id, len(cp.memories))
        ts = {m.id: m.timestamp for m in cp.memories}
        names = {e.name for e in cp.entities}
        for f in cp.facts:
            assert f.entity in names and f.evidence and all(e in ts for e in f.evidence)
            assert f.valid_from == max(ts[e] for e in f.evidence)
            assert f.value_type == ATTRIBUTES[f.attribute].value_type
            assert any(f.value.lower() in ts_text for ts_text in _texts(cp)), f
        # history: each superseded value has exactly one later valid value
        for f_old in (f for f in cp.facts if not f.valid):
            new = [f for f in cp.facts if (f.entity, f.attribute) == (f_old.entity, f_old.attribute) and f.valid]
            assert len(new) == 1 and new[0].value != f_old.value
            assert new[0].valid_from > f_old.valid_from
        # distractors exist: memories evidencing no fact
        evidenced = {e for f in cp.facts for e in f.evidence}
        assert any(m.id not in evidenced for m in cp.memories)
        # no memory reads like one of the queries
        assert not any(m.text.endswith("?") for m in cp.memories)

    for seed in s.seeds:
        cp = s.checkpoint_of(seed)
        prov = Provenance.of(cp)
        q, ref = seed.query, s.reference_of(seed)
        assert q.id not in seen_qids
        seen_qids.add(q.id)
        etype = prov.entity_type(q.fields.entity)
        names = [e.name for e in cp.entities]
        # wording: the text is exactly the realisation and round-trips
        assert q.template in template_ids(q.fields.attribute) and q.form in FORMS
        assert q.context == "" or q.context in CONTEXTS
        assert realize(q.fields, template=q.template, form=q.form, context=q.context, entity_type=etype) == q.text
        assert fields_of(q.text, names) == QueryFields(q.fields.entity, q.fields.attribute, q.fields.scope)
        assert all(q.text != m.text for m in cp.memories)
        # the reference agrees with provenance
        assert prov.reference_for(q.id, q.fields) == ref
        if q.fields.scope == "previous":
            assert prov.previous(q.fields.entity, q.fields.attribute) is not None and not ref.abstain
        if not q.fields.answerable:
            assert ref.abstain and not prov.facts_for(q.fields.entity, q.fields.attribute)
            assert etype in ATTRIBUTES[q.fields.attribute].entity_types
        else:
            assert not ref.abstain
        # descriptor: never the answer; targets sound
        d = seed.descriptor
        assert d.memory_ops is None  # every memory-state operator applies
        if ref.answer is not None:
            assert ref.answer.lower() not in {x.lower() for x in _all_descriptor_strings(d)}
        for ent in d.replacement_targets.get("entity", ()):
            assert prov.entity_type(ent) == etype and ent != q.fields.entity
            assert prov.facts_for(ent, q.fields.attribute)
        for attr in d.replacement_targets.get("attribute", ()):
            assert attr != q.fields.attribute and prov.facts_for(q.fields.entity, attr)
        has_history = prov.previous(q.fields.entity, q.fields.attribute) is not None
        assert ("scope" in d.replacement_targets) == has_history
        if has_history and q.fields.scope != "previous":
            assert d.replacement_targets["scope"] == ("previous",)
        absent_names = d.absent_targets["entity"]
        assert 3 <= len(absent_names) <= 5
        for name in absent_names:
            assert name in pools.ENTITY_NAMES[etype] and name not in names
            assert all(name.lower() not in t for t in _texts(cp)), name
        for attr in d.absent_targets.get("attribute", ()):
            assert etype in ATTRIBUTES[attr].entity_types and not prov.facts_for(q.fields.entity, attr)
        assert len(d.value_pool) == 5 and len(set(d.value_pool)) == 5
        vtype = ATTRIBUTES[q.fields.attribute].value_type
        fact_values = {f.value.lower() for f in cp.facts}
        for v in d.value_pool:
            assert v in pools.POOLS[vtype] and v.lower() not in fact_values
            assert all(v.lower() not in t for t in _texts(cp)), v


def test_default_suite_invariants(suite):
    check_suite_invariants(suite)
    assert len(suite.checkpoints) == 12
    assert len(suite.seeds) == 12 * 8


def test_default_suite_mix(suite):
    scopes = [s.query.fields.scope for s in suite.seeds]
    assert scopes.count("previous") >= 12 and scopes.count("any") >= 1
    unanswerable = [s for s in suite.seeds if not s.query.fields.answerable]
    assert 12 <= len(unanswerable) <= 24
    assert {s.query.form for s in suite.seeds} == set(FORMS)
    assert len({s.query.template for s in suite.seeds}) >= 25
    assert sum(1 for s in suite.seeds if s.query.context) >= 20
    pairs = {(cp.id, f.entity, f.attribute) for cp in suite.checkpoints.values() for f in cp.facts}
    hist = {(cp.id, f.entity, f.attribute) for cp in suite.checkpoints.values() for f in cp.facts if not f.valid}
    assert 0.2 <= len(hist) / len(pairs) <= 0.4


def test_near_misses_and_shared_values(suite):
    for cp in suite.checkpoints.values():
        cities = [f.value for f in cp.facts if f.attribute == "city" and f.valid]
        assert any(a != b and b.startswith(a + " ") for a in cities for b in cities), cp.id
        employers = [(f.entity, f.value) for f in cp.facts if f.attribute == "employer" and f.valid]
        by_value: dict[str, set[str]] = {}
        for ent, v in employers:
            by_value.setdefault(v, set()).add(ent)
        assert any(len(ents) >= 2 for ents in by_value.values()), cp.id


def test_entities_and_relations(suite):
    for cp in suite.checkpoints.values():
        types = {e.type for e in cp.entities}
        assert types == {"person", "pet"}
        for e in cp.entities:
            first = next(m for m in cp.memories if re.search(rf"(?<!\w){e.name}(?!\w)", m.text))
            if e.type == "person":  # introduced with the relation on first mention
                assert re.search(rf"[Mm]y [a-z ]+ {e.name}\b", first.text), first
            else:  # a pet is first mentioned by the memory that says what animal it is
                species = [f for f in cp.facts if f.entity == e.name and f.attribute == "species"]
                assert len(species) == 1 and species[0].evidence == (first.id,), first


def test_statements_differ_from_query_templates():
    for attr, phr in STATEMENTS.items():
        for t in phr["initial"] + phr["update"]:
            assert not t.endswith("?")
            for tid in template_ids(attr):
                for form in FORMS:
                    assert t != ATTRIBUTES[attr].templates[tid][form]


def test_determinism_identical_bytes(tmp_path):
    a = write_synthetic(tmp_path / "a.jsonl", personas=4, seed=11)
    b = write_synthetic(tmp_path / "b.jsonl", personas=4, seed=11)
    assert a.read_bytes() == b.read_bytes()
    c = write_synthetic(tmp_path / "c.jsonl", personas=4, seed=12)
    assert c.read_bytes() != a.read_bytes()


def test_shipped_default_is_the_generated_suite(tmp_path):
    regenerated = write_synthetic(tmp_path / "default.jsonl", personas=12, seed=7)
    assert DEFAULT.read_bytes() == regenerated.read_bytes()
    head = json.loads(DEFAULT.read_text(encoding="utf-8").splitlines()[0])
    assert head["generator_args"] == {"personas": 12, "seed": 7, "queries_per_persona": 8}
    assert head == {"kind": "header", "schema": 1, "suite": "synthetic-p12-s7", **header(12, 7)}


def test_load_round_trip(suite, tmp_path):
    path = write_suite(suite, tmp_path / "s.jsonl", header=header(12, 7))
    back = load_suite(path)
    assert back.name == suite.name
    assert {k: v.to_dict() for k, v in back.checkpoints.items()} == \
           {k: v.to_dict() for k, v in suite.checkpoints.items()}
    assert [s.to_dict() for s in back.seeds] == [s.to_dict() for s in suite.seeds]
    assert back.references == suite.references
    check_suite_invariants(back)


def _broken(tmp_path: Path, name: str, edit) -> tuple[Path, int]:
    lines = DEFAULT.read_text(encoding="utf-8").splitlines()
    lineno = edit(lines)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lineno


def _first_seed_line(lines: list[str]) -> int:
    return next(i for i, ln in enumerate(lines) if json.loads(ln)["kind"] == "seed")


def test_malformed_bad_json_names_file_and_line(tmp_path):
    def edit(lines):
        lines[2] = lines[2][:-1]  # drop the closing brace of a checkpoint record
        return 3
    path, lineno = _broken(tmp_path, "bad_json.jsonl", edit)
    with pytest.raises(SeedFileError, match=re.escape(f"{path}:{lineno}: invalid JSON")):
        load_suite(path)


@pytest.mark.parametrize("case, lineno, needle", [
    ("not_object", 2, "each line must be a JSON object"),
    ("unknown_kind", 2, "unknown kind 'chekpoint'"),
    ("header_not_first", 1, "first record must be the header"),
    ("second_header", 3, "a second header"),
])
def test_malformed_line_level_names_file_and_line(tmp_path, case, lineno, needle):
    lines = DEFAULT.read_text(encoding="utf-8").splitlines()
    if case == "not_object":
        lines[1] = "[1, 2]"
    elif case == "unknown_kind":
        lines[1] = json.dumps({**json.loads(lines[1]), "kind": "chekpoint"})
    elif case == "header_not_first":
        lines[0], lines[1] = lines[1], lines[0]
    else:
        lines.insert(2, lines[0])
    path = tmp_path / f"{case}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SeedFileError, match=re.escape(f"{path}:{lineno}: {needle}")) as err:
        load_suite(path)
    assert err.value.line == lineno


def test_non_utf8_seed_file_is_a_seed_file_error(tmp_path):
    path = tmp_path / "latin1.jsonl"
    header = DEFAULT.read_bytes().splitlines(keepends=True)[0]
    path.write_bytes(header + b'{"kind": "checkpoint", "id": "caf\xe9"}\n')
    with pytest.raises(SeedFileError, match=re.escape(f"{path}:2: not UTF-8 text")):
        load_suite(path)


def test_malformed_missing_field_names_file_line_and_field(tmp_path):
    def edit(lines):
        i = _first_seed_line(lines)
        rec = json.loads(lines[i])
        del rec["query"]["text"]
        lines[i] = json.dumps(rec)
        return i + 1
    path, lineno = _broken(tmp_path, "missing.jsonl", edit)
    with pytest.raises(SeedFileError, match=re.escape(f"{path}:{lineno}:")) as err:
        load_suite(path)
    assert err.value.field == "query.text"


def test_malformed_unknown_checkpoint_names_file_and_line(tmp_path):
    def edit(lines):
        i = _first_seed_line(lines)
        rec = json.loads(lines[i])
        rec["checkpoint_id"] = "p999"
        lines[i] = json.dumps(rec)
        return i + 1
    path, lineno = _broken(tmp_path, "unknown_cp.jsonl", edit)
    with pytest.raises(SeedFileError, match=re.escape(f"{path}:{lineno}: unknown checkpoint 'p999'")):
        load_suite(path)


def test_malformed_evidence_outside_checkpoint(tmp_path):
    def edit(lines):
        rec = json.loads(lines[1])
        rec["facts"][0]["evidence"] = ["p1-m999"]
        lines[1] = json.dumps(rec)
        return 2
    path, lineno = _broken(tmp_path, "evidence.jsonl", edit)
    with pytest.raises(SeedFileError, match=re.escape(f"{path}:{lineno}:")):
        load_suite(path)


def test_bad_arguments():
    with pytest.raises(ValueError, match="personas"):
        synthesize(0, 1)
    with pytest.raises(ValueError, match="queries_per_persona"):
        synthesize(2, 1, queries_per_persona=0)


@settings(max_examples=12, deadline=None)
@given(personas=st.integers(1, 3), seed=st.integers(0, 2**31), qpp=st.integers(1, 12))
def test_property_random_suites_hold_invariants(personas, seed, qpp):
    s = synthesize(personas, seed, queries_per_persona=qpp)
    assert len(s.checkpoints) == personas
    assert all(1 <= sum(1 for x in s.seeds if x.checkpoint_id == cp) <= qpp for cp in s.checkpoints)
    check_suite_invariants(s)


# -- pools ----------------------------------------------------------------------------------------------------
def test_pool_sizes():
    assert len(pools.PERSON_NAMES) >= 80 and len(pools.PET_NAMES) >= 40
    for vtype, values in pools.POOLS.items():
        assert len(values) >= 40, vtype
        assert len(set(values)) == len(values), vtype


def test_pools_are_disjoint_and_names_are_not_words_of_values():
    seen: dict[str, str] = {}
    for vtype, values in pools.POOLS.items():
        if vtype in ("person_name",):
            continue
        for v in values:
            assert v.casefold() not in seen, (v, vtype, seen.get(v.casefold()))
            seen[v.casefold()] = vtype
    names = set(pools.PERSON_NAMES) | set(pools.PET_NAMES)
    assert len(names) == len(pools.PERSON_NAMES) + len(pools.PET_NAMES)
    words = {w.casefold() for vs in pools.POOLS.values() if vs not in (pools.PERSON_NAMES, pools.PET_NAMES)
             for v in vs for w in v.split()}
    assert not {n.casefold() for n in names} & words
    # no name is an attribute phrase or scope marker
    for n in names:
        assert fields_of(n, []) is None


def test_near_miss_values_are_type_compatible_and_distinct():
    import random
    rng = random.Random(0)
    for vtype in ("city", "company", "food", "toy", "clock_time", "weekday"):
        for v in pools.POOLS[vtype][:10]:
            nm = pools.near_miss(vtype, v, rng)
            assert nm and nm != v
            assert set(nm.split()) & set(v.split())
    assert pools.near_miss("species", "dog", rng) is None


def test_attribute_coverage_of_statements():
    for etype in ("person", "pet"):
        for attr in attributes_for(etype):
            assert STATEMENTS[attr]["initial"] and STATEMENTS[attr]["update"]
