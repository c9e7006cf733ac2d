"""The published seed-file schema: the committed copy is the generated one, real files pass it, bad lines
fail it, and what it says agrees with the loader."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from ufuzz.cli import main
from ufuzz.seeds import schema, wording
from ufuzz.seeds.io import SeedFileError, load_suite

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "seeds" / "default.jsonl"
COMMITTED = ROOT / "seeds" / "schema.json"


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft202012Validator(schema.json_schema())


def test_committed_schema_is_the_generated_one():
    """Regenerate with `ufuzz seeds schema > seeds/schema.json` after changing ufuzz/seeds/schema.py."""
    out = CliRunner().invoke(main, ["seeds", "schema"])
    assert out.exit_code == 0
    assert json.loads(COMMITTED.read_text(encoding="utf-8")) == json.loads(out.output) == schema.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema.json_schema())


def test_every_line_of_the_shipped_suite_passes_the_schema(validator):
    lines = DEFAULT.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, start=1):
        errors = list(validator.iter_errors(json.loads(line)))
        assert not errors, f"line {i}: {errors[0].message}"


def _line(kind: str) -> dict:
    return next(json.loads(x) for x in DEFAULT.read_text(encoding="utf-8").splitlines()
                if json.loads(x)["kind"] == kind)


@pytest.mark.parametrize("kind, edit", [
    ("reference", lambda r: r.update(supporting="p1-m2")),
    ("reference", lambda r: r.update(abstain="no")),
    ("seed", lambda r: r["query"]["fields"].update(answerable="no")),
    ("seed", lambda r: r["descriptor"].update(value_pool="Tellaris Bank")),
    ("seed", lambda r: r["descriptor"].update(replacement_targets=["Greta"])),
    ("checkpoint", lambda r: r.update(memories=[])),
    ("checkpoint", lambda r: r["memories"][0].update(text="   ")),
    ("checkpoint", lambda r: r["memories"][0].update(timestamp="last tuesday")),
    ("checkpoint", lambda r: r["memories"][0].update(text="x" * (schema.MAX_MEMORY_TEXT + 1))),
    ("header", lambda r: r.update(schema=2)),
    ("seed", lambda r: r.update(sneaky=1)),
])
def test_the_schema_and_the_loader_refuse_the_same_bad_records(validator, tmp_path, kind, edit):
    rec = _line(kind)
    assert not list(validator.iter_errors(rec))
    edit(rec)
    assert list(validator.iter_errors(rec)), "the published schema lets it through"
    lines = DEFAULT.read_text(encoding="utf-8").splitlines()
    i = next(i for i, x in enumerate(lines) if json.loads(x)["kind"] == kind)
    lines[i] = json.dumps(rec)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SeedFileError) as err:
        load_suite(path)
    assert err.value.line == i + 1 and err.value.field


def test_query_forms_are_the_wording_forms_plus_free():
    assert schema.FORMS == (*wording.FORMS, "free")
    assert schema.QueryModel.model_fields["form"].annotation.__args__ == schema.FORMS


def test_seeds_check_command(tmp_path):
    r = CliRunner().invoke(main, ["seeds", "check", str(DEFAULT)])
    assert r.exit_code == 0 and "96 seeds, 12 checkpoints" in r.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text(DEFAULT.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["seeds", "check", str(bad)])
    assert r.exit_code == 2 and "nothing to fuzz" in r.output and "Traceback" not in r.output


def test_memory_ops_must_name_registered_state_operators(tmp_path):
    """A typo in ``memory_ops`` would silently leave the seed without that operator: refused at load time by
    ``seeds check`` (and by every campaign), naming file:line and the field; a registered name passes."""
    import json

    from ufuzz.operators import names

    lines = DEFAULT.read_text(encoding="utf-8").splitlines()
    i = next(n for n, x in enumerate(lines) if json.loads(x)["kind"] == "seed")
    rec = json.loads(lines[i])
    for ops, ok in ((["update", "explode"], False), (["paraphrase"], False), (list(names("state")), True)):
        rec["descriptor"]["memory_ops"] = ops
        lines[i] = json.dumps(rec)
        path = tmp_path / "s.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        r = CliRunner().invoke(main, ["seeds", "check", str(path)])
        assert (r.exit_code == 0) == ok, r.output
        if not ok:
            assert f"{path}:{i + 1}: unknown memory op {ops[-1]!r}" in r.output and "Traceback" not in r.output
            with pytest.raises(SeedFileError) as err:
                load_suite(path, memory_ops=names("state"))
            assert err.value.field == f"descriptor.memory_ops[{len(ops) - 1}]"
        assert load_suite(path).seeds  # the registry's names are the caller's to give
