"""Bad input as a new user gives it, as one table: every case ends with a non-zero exit, a message naming
``file:line`` and the field (or the option), no traceback, and nothing written.

"Nothing written" is checked on the whole test directory: its files and their contents are the same after
the command as before it (the inputs a case sets up are made before the snapshot). Each case is a function
that sets up its input under ``tmp`` and returns the command line and the texts the message must hold.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufuzz.cli import main
from ufuzz.seeds.schema import MAX_MEMORY_TEXT
from ufuzz.triage.corpusformat import content_hash

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "seeds" / "default.jsonl"
CORPUS = ROOT / "corpus" / "embedded-dense.jsonl"
EXAMPLE_TOML = ROOT / "examples" / "product.toml"
RUN = ["run", "--budget", "5", "--quiet"]


# ---------------------------------------------------------------------------------------------------- inputs
def _records() -> list[dict]:
    return [json.loads(x) for x in DEFAULT.read_text(encoding="utf-8").splitlines()]


def _index(recs: list[dict], kind: str, nth: int = 0) -> int:
    return [i for i, r in enumerate(recs) if r["kind"] == kind][nth]


def seeds_file(tmp: Path, kind: str, edit: Callable[[dict], None], nth: int = 0) -> tuple[Path, int]:
    """The shipped suite with one record edited; (file, 1-based line of the edit)."""
    recs = _records()
    i = _index(recs, kind, nth)
    edit(recs[i])
    path = tmp / "seeds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path, i + 1


def seeds_raw(tmp: Path, kind: str, old: str, new: str) -> tuple[Path, int]:
    """The shipped suite with a raw text edit inside one record (for what JSON cannot say, like NaN)."""
    lines = DEFAULT.read_text(encoding="utf-8").splitlines()
    i = _index(_records(), kind)
    assert old in lines[i]
    lines[i] = lines[i].replace(old, new, 1)
    path = tmp / "seeds.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, i + 1


def run_seeds(tmp: Path, path: Path) -> list[str]:
    return [*RUN, "--seeds", str(path), "--out", str(tmp / "camp")]


def unwritable(tmp: Path) -> Path:
    """A folder nothing can be written in: a read-only directory, or for root (who ignores permission bits)
    the kernel's /sys."""
    if os.geteuid() != 0:
        ro = tmp / "readonly"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    if not Path("/sys").is_dir():
        pytest.skip("no unwritable folder for root on this system")
    return Path("/sys")


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """A tiny real campaign (copied into each test that reads it)."""
    out = tmp_path_factory.mktemp("camp") / "camp"
    r = CliRunner().invoke(main, ["run", "--budget", "8", "--seed", "1", "--out", str(out), "--quiet",
                                  "--opt", "retrieval=bm25"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return out


def copy_campaign(tmp: Path, src: Path, db: Callable[[Path], None] | None = None,
                  campaign_json: str | None = None) -> Path:
    dest = tmp / "camp"
    shutil.copytree(src, dest)
    if db is not None:
        db(dest / "corpus.sqlite")
    if campaign_json is not None:
        (dest / "campaign.json").write_text(campaign_json)
    return dest


def zero_bytes(p: Path) -> None:
    p.write_bytes(b"")


def random_bytes(p: Path) -> None:
    p.write_bytes(hashlib.sha512(b"ufuzz").digest() * 200)


def truncated(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:20000])


def foreign(p: Path) -> None:
    p.unlink()
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    con.commit()
    con.close()


def corpus_file(tmp: Path, edit: Callable[[list[dict]], int], rehash: bool = True) -> tuple[Path, int]:
    recs = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines()]
    i = edit(recs)
    if rehash and recs[i]["kind"] != "header":
        recs[i]["sha256"] = content_hash(recs[i])
    path = tmp / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path, i + 1


def first_failure(recs: list[dict]) -> int:
    return next(i for i, r in enumerate(recs) if r["kind"] == "failure")


def product_toml(tmp: Path, key: str, value: str) -> Path:
    """The example product config with the top-level ``key`` set to ``value`` (TOML source)."""
    lines = EXAMPLE_TOML.read_text(encoding="utf-8").splitlines()
    i = next(i for i, x in enumerate(lines) if x.startswith(f"{key} = "))
    lines[i] = f"{key} = {value}"
    path = tmp / "product.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Case:
    id: str
    setup: Callable[..., tuple[list[str], list[str]]]  # (tmp[, campaign]) -> (argv, texts the message holds)
    code: int | None = None  # the exit status when it is fixed by the command's contract (None: any non-zero)


def _seed_case(id_: str, kind: str, edit, needles: Callable[[Path, int], list[str]], nth: int = 0) -> Case:
    def setup(tmp):
        path, line = seeds_file(tmp, kind, edit, nth)
        return run_seeds(tmp, path), needles(path, line)
    return Case(id_, setup, 2)


def _raw_case(id_: str, kind: str, old: str, new: str, needles) -> Case:
    def setup(tmp):
        path, line = seeds_raw(tmp, kind, old, new)
        return run_seeds(tmp, path), needles(path, line)
    return Case(id_, setup, 2)


def _flag(id_: str, *args: str, needle: str, cmd: tuple[str, ...] = ("run", "--budget", "5", "--quiet")) -> Case:
    def setup(tmp):
        argv = [*cmd, *args]
        if cmd[0] == "run":
            argv += ["--out", str(tmp / "camp")]
        return argv, [needle]
    return Case(id_, setup, 2)


def _at(field: str, message: str) -> Callable[[Path, int], list[str]]:
    return lambda path, line: [f"{path}:{line}: {message}", f"(field '{field}')"]


def _header_only(tmp):
    path = tmp / "seeds.jsonl"
    path.write_text(DEFAULT.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    return run_seeds(tmp, path), [f"{path}: no seed records: nothing to fuzz"]


def _huge_line(tmp):
    """A 50 MB memory line is refused before it is read whole, let alone embedded."""
    path = tmp / "seeds.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(DEFAULT.read_text(encoding="utf-8").splitlines()[0] + "\n")
        fh.write('{"kind": "checkpoint", "id": "big", "memories": [{"id": "m1", "timestamp": "2024-01-01", '
                 '"text": "' + "a" * (50 * 1024 * 1024) + '"}]}\n')
    return run_seeds(tmp, path), [f"{path}:2: line longer than 33554432 bytes"]


def _orphan_reference(tmp):
    recs = _records()
    recs.append({"kind": "reference", "query_id": "orphan", "answer": "x", "abstain": False, "supporting": []})
    path = tmp / "seeds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return run_seeds(tmp, path), [f"{path}:{len(recs)}: reference for query 'orphan' has no seed",
                                  "(field 'query_id')"]


def _duplicate_query(tmp):
    recs = _records()
    a, b = _index(recs, "seed", 0), _index(recs, "seed", 1)
    recs[b]["query"]["id"] = recs[a]["query"]["id"]
    path = tmp / "seeds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return run_seeds(tmp, path), [f"{path}:{b + 1}: query id", "(field 'query.id')"]


def _not_utf8(tmp):
    path = tmp / "seeds.jsonl"
    path.write_bytes(DEFAULT.read_bytes().splitlines(keepends=True)[0] + b'{"kind": "checkpoint", "id": "caf\xe9"}\n')
    return run_seeds(tmp, path), [f"{path}:2: not UTF-8 text"]


def _empty_file(tmp):
    path = tmp / "seeds.jsonl"
    path.write_text("")
    return run_seeds(tmp, path), [f"{path}: empty seed file (no header)"]


SEED_FILE = [
    _raw_case("answer-NaN", "reference", '"answer": "', '"answer": NaN, "x": "',
              lambda p, n: [f"{p}:{n}: invalid JSON: NaN is not a JSON number"]),
    _raw_case("abstain-NaN", "reference", '"abstain": false', '"abstain": NaN',
              lambda p, n: [f"{p}:{n}: invalid JSON: NaN is not a JSON number"]),
    _raw_case("supporting-Infinity", "reference", '"supporting": [', '"supporting": [Infinity, ',
              lambda p, n: [f"{p}:{n}: invalid JSON: Infinity is not a JSON number"]),
    _seed_case("seed-id-with-newline", "seed", lambda r: r.update(id=r["id"] + "\nfake"),
               _at("id", "an id must not hold control characters (found '\\n')")),
    _seed_case("memory-id-with-NUL", "checkpoint", lambda r: r["memories"][0].update(id=r["memories"][0]["id"] + "\0"),
               _at("memories[0].id", "an id must not hold control characters (found '\\x00')")),
    _seed_case("supporting-a-string", "reference", lambda r: r.update(supporting="p1-m2"),
               _at("supporting", "expected an array, got string 'p1-m2'")),
    _seed_case("answerable-a-string", "seed", lambda r: r["query"]["fields"].update(answerable="no"),
               _at("query.fields.answerable", "expected true or false, got string 'no'")),
    _seed_case("value_pool-a-string", "seed", lambda r: r["descriptor"].update(value_pool="Tellaris Bank"),
               _at("descriptor.value_pool", "expected an array, got string 'Tellaris Bank'")),
    _seed_case("replacement_targets-a-list", "seed",
               lambda r: r["descriptor"].update(replacement_targets=["Greta", "Hester"]),
               _at("descriptor.replacement_targets", "expected an object, got array")),
    _seed_case("memory_ops-not-a-name", "seed", lambda r: r["descriptor"].update(memory_ops=["Update!"]),
               _at("descriptor.memory_ops[0]", "must match")),
    _seed_case("memory_ops-unknown-operator", "seed",
               lambda r: r["descriptor"].update(memory_ops=["update", "explode"]),
               _at("descriptor.memory_ops[1]", "unknown memory op 'explode'; the state operators are: delete,")),
    _seed_case("memory_ops-a-query-operator", "seed", lambda r: r["descriptor"].update(memory_ops=["paraphrase"]),
               _at("descriptor.memory_ops[0]", "unknown memory op 'paraphrase'")),
    _seed_case("empty-memory-text", "checkpoint", lambda r: r["memories"][0].update(text=""),
               _at("memories[0].text", "must not be empty")),
    _seed_case("blank-memory-text", "checkpoint", lambda r: r["memories"][0].update(text=" \n\t"),
               _at("memories[0].text", "must not be empty or blank")),
    _seed_case("huge-memory-text", "checkpoint", lambda r: r["memories"][0].update(text="a" * (MAX_MEMORY_TEXT + 1)),
               _at("memories[0].text", f"longer than {MAX_MEMORY_TEXT} characters")),
    _seed_case("no-memories", "checkpoint", lambda r: r.update(memories=[]),
               _at("memories", "must not be empty")),
    _seed_case("bad-timestamp", "checkpoint", lambda r: r["memories"][0].update(timestamp="last tuesday"),
               _at("memories[0].timestamp", "must be an ISO-8601 date or date-time")),
    _seed_case("impossible-date", "checkpoint", lambda r: r["memories"][0].update(timestamp="2023-02-30T10:00:00"),
               _at("memories[0].timestamp", "not a real date and time")),
    _seed_case("duplicate-memory-id", "checkpoint",
               lambda r: r["memories"][1].update(id=r["memories"][0]["id"]),
               _at("memories[1].id", "duplicate memory id")),
    _seed_case("evidence-outside-checkpoint", "checkpoint", lambda r: r["facts"][0].update(evidence=["p1-m999"]),
               _at("facts[0].evidence[0]", "evidence id 'p1-m999' is not a memory of this checkpoint")),
    _seed_case("misspelt-field", "reference", lambda r: r.update(suporting=r.pop("supporting")),
               _at("suporting", "unknown field")),
    _seed_case("answer-in-a-seed", "seed", lambda r: r.update(answer="Halcyra Health"),
               _at("answer", "seeds and descriptors never carry the answer")),
    _seed_case("answer-and-abstain", "reference", lambda r: r.update(abstain=True),
               _at("answer", "a reference either abstains")),
    _seed_case("no-answer", "reference", lambda r: r.update(answer=None),
               _at("answer", "a non-abstaining reference needs an answer")),
    _seed_case("unknown-scope", "seed", lambda r: r["query"]["fields"].update(scope="tomorrow"),
               _at("query.fields.scope", "must be 'current', 'previous' or 'any', got 'tomorrow'")),
    _seed_case("supporting-not-in-checkpoint", "reference", lambda r: r.update(supporting=["p1-m999"]),
               _at("supporting[0]", "memory id 'p1-m999' is not in checkpoint 'p1'")),
    _seed_case("unknown-checkpoint", "seed", lambda r: r.update(checkpoint_id="p999"),
               _at("checkpoint_id", "unknown checkpoint 'p999'")),
    _seed_case("schema-2", "header", lambda r: r.update(schema=2),
               _at("schema", "unsupported schema version 2")),
    Case("header-only", _header_only, 2),
    Case("50MB-line", _huge_line, 2),
    Case("reference-without-seed", _orphan_reference, 2),
    Case("two-seeds-one-query", _duplicate_query, 2),
    Case("not-utf8", _not_utf8, 2),
    Case("empty-file", _empty_file, 2),
]

FLAGS = [
    _flag("budget-10**30", "--budget", str(10**30), needle="--budget"),
    _flag("budget-0", "--budget", "0", needle="--budget"),
    _flag("seed-2**64", "--seed", str(2**64), needle="--seed"),
    _flag("k-0", "--k", "0", needle="--k"),
    _flag("k-1000", "--k", "1000", needle="--k"),
    _flag("p-nan", "--p", "nan", needle="--p"),
    _flag("p-1", "--p", "1", needle="--p"),
    _flag("explore-share-inf", "--explore-share", "inf", needle="--explore-share"),
    _flag("worker-timeout-inf", "--worker-timeout", "inf", needle="--worker-timeout"),
    _flag("worker-timeout-0", "--worker-timeout", "0", needle="--worker-timeout"),
    _flag("worker-max-rss-nan", "--worker-max-rss-mb", "nan", needle="--worker-max-rss-mb"),
    _flag("worker-recycle-10**30", "--worker-recycle", str(10**30), needle="--worker-recycle"),
    _flag("llm-timeout-0", "--llm-timeout", "0", needle="--llm-timeout"),
    _flag("llm-retries-99", "--llm-retries", "99", needle="--llm-retries"),
    _flag("isolation", "--isolation", "thread", needle="--isolation"),
    _flag("workers-0", "--workers", "0", needle="--workers"),
    _flag("workers--1", "--workers", "-1", needle="--workers"),
    _flag("workers-word", "--workers", "two", needle="--workers"),
    _flag("ray-address-with-sqlite", "--ray-address", "ray://127.0.0.1:1", needle="--db postgresql"),
    _flag("ray-address-empty", "--ray-address", " ", needle="--ray-address"),
    _flag("strategy", "--strategy", "nope", needle="--strategy"),
    _flag("opt-no-value", "--opt", "novalue", needle="--opt"),
    _flag("llm-uses-without-url", "--llm-uses", "answer", needle="--llm-base-url"),
    _flag("llm-uses-unknown", "--llm-uses", "dream", "--llm-base-url", "http://127.0.0.1:9/v1",
          needle="--llm-uses"),
    _flag("backend-unknown", "--backend", "nosuch", needle="--backend"),
    _flag("config-missing", "--backend", "http", "--config", "/nonexistent/product.toml", needle="--config"),
    _flag("config-twice", "--backend", "http", "--config", "examples/product.toml", "--opt", "config=other.toml",
          needle="two config files"),
    _flag("bench-config-missing", "--backend", "http", "--config", "/nonexistent/product.toml", needle="--config",
          cmd=("bench",)),
    _flag("backends-check-config-missing", "--config", "/nonexistent/product.toml", needle="--config",
          cmd=("backends", "check", "http")),
    _flag("bench-budget-10**30", "--budget", str(10**30), needle="--budget", cmd=("bench",)),
    _flag("bench-runs-0", "--runs", "0", needle="--runs", cmd=("bench",)),
    _flag("bench-seed-2**64", "--seed", str(2**64), needle="--seed", cmd=("bench",)),
    _flag("synth-seed-2**64", "--seed", str(2**64), "-o", "/nonexistent/x.jsonl", needle="--seed",
          cmd=("seeds", "synth")),
    _flag("synth-personas-0", "--personas", "0", "-o", "/nonexistent/x.jsonl", needle="--personas",
          cmd=("seeds", "synth")),
]


def _db(url: Callable[[Path], str], *needles: str, hidden: str | None = None) -> Callable:
    def setup(tmp):
        return [*RUN, "--out", str(tmp / "camp"), "--db", url(tmp)], ["--db", *needles]
    return setup


def _foreign_db(tmp):
    path = tmp / "app.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    con.commit()
    con.close()
    return [*RUN, "--out", str(tmp / "camp"), "--db", f"sqlite:///{path}"], \
        ["--db", "not a ufuzz corpus database: it already holds other tables (invoices)"]


def _garbage_db(tmp):
    path = tmp / "x.sqlite"
    random_bytes(path)
    return [*RUN, "--out", str(tmp / "camp"), "--db", f"sqlite:///{path}"], ["--db", "not an SQLite database"]


def _out_is_a_file(tmp):
    (tmp / "afile").write_text("x")
    return [*RUN, "--out", str(tmp / "afile")], ["--out", "is a file"]


def _out_under_a_file(tmp):
    (tmp / "afile").write_text("x")
    return [*RUN, "--out", str(tmp / "afile" / "camp")], ["--out", "is a file, so"]


def _out_readonly(tmp):
    return [*RUN, "--out", str(unwritable(tmp) / "camp")], ["--out", "cannot write the campaign directory"]


def _bad_option_in_existing_dir(tmp):
    (tmp / "camp").mkdir()
    (tmp / "camp" / "notes.txt").write_text("mine")
    return [*RUN, "--out", str(tmp / "camp"), "--opt", "retrieval=sparse"], ["retrieval"]


def _force_with_bad_option(tmp, campaign):
    """--force with a start that fails leaves the campaign it was to replace as it was."""
    dest = copy_campaign(tmp, campaign)
    return [*RUN, "--out", str(dest), "--force", "--opt", "retrieval=sparse"], ["retrieval"]


def _line_of(path: Path, key: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(f"{key} ="))


def _http_nan_timeout(tmp):
    cfg = product_toml(tmp, "timeout", "nan")
    return [*RUN, "--out", str(tmp / "camp"), "--backend", "http", "--config", str(cfg)], \
        [f"product.toml:{_line_of(cfg, 'timeout')}: 'timeout': expected a finite number"]


def _http_string_retries(tmp):
    cfg = product_toml(tmp, "retries", '"3"')
    return [*RUN, "--out", str(tmp / "camp"), "--backend", "http", "--config", str(cfg)], \
        [f"product.toml:{_line_of(cfg, 'retries')}: 'retries': expected an integer, got string '3'"]


START = [
    Case("db-notaurl", _db(lambda t: "notaurl", "not a valid SQLAlchemy URL"), 2),
    Case("db-foo-scheme", _db(lambda t: "foo://bar", "names no database/driver"), 2),
    Case("db-unreachable-postgres", _db(lambda t: "postgresql+psycopg://fuzzer:hunter2@127.0.0.1:1/corpus",
                                        "--db", "cannot open corpus database"), 3),  # the environment, not the input
    Case("db-foreign-sqlite", _foreign_db, 2),
    Case("db-random-bytes", _garbage_db, 2),
    Case("db-folder-is-a-file", _db(lambda t: (t / "f").write_text("x") and f"sqlite:///{t / 'f' / 'c.sqlite'}",
                                    "cannot create SQLite corpus database"), 2),
    Case("out-is-a-file", _out_is_a_file, 2),
    Case("out-under-a-file", _out_under_a_file, 2),
    Case("out-read-only", _out_readonly, 2),
    Case("bad-option-leaves-existing-dir-alone", _bad_option_in_existing_dir, 2),
    Case("force-with-bad-option-keeps-old-campaign", _force_with_bad_option, 2),
    Case("http-config-nan", _http_nan_timeout, 2),
    Case("http-config-string", _http_string_retries, 2),
]


def _o(cmd: Callable[[Path, Path, Path], list[str]], target: Callable[[Path], Path], needle: str,
       option: str = "-o") -> Callable:
    def setup(tmp, campaign):
        camp = copy_campaign(tmp, campaign)
        return cmd(tmp, camp, target(tmp)), [option, needle]
    return setup


def _dir_target(t: Path) -> Path:
    (t / "adir").mkdir()
    return t / "adir"


OUTPUTS = [
    Case("synth-o-read-only", _o(lambda t, c, o: ["seeds", "synth", "-o", str(o)],
                                 lambda t: unwritable(t) / "x.jsonl", "cannot write"), 2),
    Case("synth-o-is-a-directory", _o(lambda t, c, o: ["seeds", "synth", "-o", str(o)], _dir_target,
                                      "is a directory"), 2),
    Case("import-o-read-only", _o(lambda t, c, o: ["seeds", "import", "memops",
                                                   str(ROOT / "tests/fixtures/importers/memops_evidence.json"),
                                                   "-o", str(o)],
                                  lambda t: unwritable(t) / "x.jsonl", "cannot write"), 2),
    Case("export-o-read-only", _o(lambda t, c, o: ["corpus", "export", str(c), "-o", str(o)],
                                  lambda t: unwritable(t) / "x.jsonl", "cannot write"), 2),
    Case("export-max-10**30", _o(lambda t, c, o: ["corpus", "export", str(c), "-o", str(o), "--max", str(10**30)],
                                 lambda t: t / "x.jsonl", "is not in the range", "--max"), 2),
]


def _read(cmd: str, db=None, campaign_json=None, *needles: str) -> Callable:
    def setup(tmp, campaign):
        camp = copy_campaign(tmp, campaign, db, campaign_json)
        argv = [*cmd.split(), str(camp)] + (["-o", str(tmp / "x.jsonl")] if cmd == "corpus export" else [])
        return argv, list(needles)
    return setup


READS = []
for _cmd in ("status", "replay", "corpus export", "failures list", "report"):
    _n = _cmd.replace(" ", "-")
    READS += [
        Case(f"{_n}-0-byte-db", _read(_cmd, zero_bytes, None, "empty database (0 bytes)"), 2),
        Case(f"{_n}-random-bytes-db", _read(_cmd, random_bytes, None, "not an SQLite database"), 2),
        Case(f"{_n}-truncated-db", _read(_cmd, truncated, None, "damaged or truncated"), 2),
        Case(f"{_n}-foreign-db", _read(_cmd, foreign, None, "not a ufuzz corpus database", "invoices"), 2),
        Case(f"{_n}-campaign-json-not-json", _read(_cmd, None, "{not json", "campaign.json: not valid JSON"), 2),
        Case(f"{_n}-campaign-json-wrong-type", _read(_cmd, None, '{"campaign": 5}', "campaign.json:",
                                                     "expected a string", "(field 'campaign')"), 2),
        Case(f"{_n}-campaign-json-unknown", _read(_cmd, None, '{"campaign": "nope"}',
                                                  "campaign.json names campaign 'nope', which is not in"), 2),
    ]


def _check(edit, needles, rehash=True) -> Callable:
    def setup(tmp):
        path, line = corpus_file(tmp, edit, rehash)
        return ["corpus", "check", str(path)], [n.format(path=path, line=line) for n in needles]
    return setup


def _unknown_header_backend(recs):
    recs[0]["backend"] = "nosuch"
    return 0


def _tampered_memory(recs):
    i = next(i for i, r in enumerate(recs) if r["kind"] == "checkpoint")
    recs[i]["memories"][0]["text"] = "My boss Greta got a job with Globex."
    return i


def _unknown_supporting(recs):
    i = first_failure(recs)
    recs[i]["mutant"]["reference"].update(supporting=["no-such-memory"], invalidated=[])
    return i


def _nan_in_record(recs):
    i = first_failure(recs)
    recs[i]["discovery"]["occurrences"] = "3"
    return i


CORPUS_CHECK = [
    Case("check-unknown-backend-in-header", _check(_unknown_header_backend, [
        "{path}:1: unknown backend 'nosuch' in the corpus header (field 'backend')"]), 2),
    Case("check-tampered-memory-text", _check(_tampered_memory, [
        "{path}:{line}: the record does not match its content hash", "(field 'sha256')"], rehash=False), 2),
    Case("check-unknown-supporting-id", _check(_unknown_supporting, [
        "{path}:{line}: memory id 'no-such-memory' is neither in checkpoint",
        "(field 'mutant.reference.supporting[0]')"]), 2),
    Case("check-string-count", _check(_nan_in_record, [
        "{path}:{line}: expected an integer, got string '3'", "(field 'discovery.occurrences')"]), 2),
]

CASES = SEED_FILE + FLAGS + START + OUTPUTS + READS + CORPUS_CHECK


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(root))] = hashlib.sha1(p.read_bytes()).hexdigest()
        elif p.is_dir():
            out[str(p.relative_to(root)) + "/"] = "dir"
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_is_refused_cleanly(case: Case, tmp_path: Path, request):
    tmp = tmp_path / "work"
    tmp.mkdir()
    if "campaign" in case.setup.__code__.co_varnames[:case.setup.__code__.co_argcount]:
        argv, needles = case.setup(tmp, request.getfixturevalue("campaign"))
    else:
        argv, needles = case.setup(tmp)
    before = _snapshot(tmp)
    result = CliRunner().invoke(main, argv, catch_exceptions=False)
    out = result.output
    assert result.exit_code != 0, out
    if case.code is not None:
        assert result.exit_code == case.code, out
    for needle in needles:
        assert needle in out, f"{needle!r} not in:\n{out}"
    assert "Traceback" not in out
    assert "hunter2" not in out  # a password in a URL is never shown
    assert _snapshot(tmp) == before, "the command wrote or changed files"
