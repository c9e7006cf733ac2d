"""Backend options: declared on the adapter class, checked once by the base class, listed by ``ufuzz backends``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ufuzz.backends import registry
from ufuzz.backends.options import Option, OptionError, Requires, check, listing, public
from ufuzz.backends.protocol import MemoryBackend
from ufuzz.cli import main

SPEC = (
    Option("mode", choices=("fast", "exact"), default="fast", help="how"),
    Option("depth", int, default=3, min=1, max=10),
    Option("ratio", float, default=0.5, min=0.0, max=1.0),
    Option("timeout", float, default=60.0, min=0, exclusive_min=True),
    Option("verbose", bool, default=False),
    Option("endpoint", url=True),
    Option("model"),
    Option("user", default="me"),
    Option("token", secret=True),
)
RULES = (Requires("endpoint", ("model",)), Requires("mode", ("token",), "exact", why="exact mode signs requests"))


def settings(**given_) -> dict:
    return check("toy", SPEC, RULES, given_)


def error(**given_) -> str:
    with pytest.raises(OptionError) as ei:
        settings(**given_)
    assert isinstance(ei.value, ValueError)  # callers that catch ValueError keep working
    return str(ei.value)


def test_defaults_fill_every_declared_option():
    assert settings() == {"mode": "fast", "depth": 3, "ratio": 0.5, "timeout": 60.0, "verbose": False,
                          "endpoint": None, "model": None, "user": "me", "token": None}


def test_messages_name_the_backend_the_option_and_what_is_allowed():
    assert error(mode="foo") == "toy backend: option 'mode': must be one of fast, exact (got 'foo')"
    assert error(depth=0) == "toy backend: option 'depth': must be between 1 and 10 (got 0)"
    assert error(depth="2.5") == "toy backend: option 'depth': must be an integer (got '2.5')"
    assert error(ratio="high") == "toy backend: option 'ratio': must be a number (got 'high')"
    assert error(ratio=float("nan")).startswith("toy backend: option 'ratio': must be a number")
    assert error(timeout=0) == "toy backend: option 'timeout': must be > 0 (got 0)"
    assert error(verbose="maybe") == "toy backend: option 'verbose': must be true or false (got 'maybe')"
    assert error(endpoint="localhost:8000") == ("toy backend: option 'endpoint': must be an http(s) URL "
                                                "(got 'localhost:8000')")
    assert error(user=" ") == "toy backend: option 'user': must not be empty"
    assert error(colour="red") == ("toy backend: unknown option 'colour'; known options: mode, depth, ratio, "
                                   "timeout, verbose, endpoint, model, user, token")
    assert error(b=1, a=2).startswith("toy backend: unknown options 'a', 'b'; known options:")


def test_rules_name_both_options():
    assert error(endpoint="http://127.0.0.1:9/v1") == "toy backend: endpoint needs option model"
    assert error(mode="exact") == "toy backend: mode=exact needs option token (exact mode signs requests)"
    assert settings(endpoint="http://127.0.0.1:9/v1", model="m")["model"] == "m"


def test_a_secret_is_never_echoed():
    secret = "tok-" + "a81f"
    bad = Option("pin", int, secret=True)
    with pytest.raises(OptionError) as ei:
        check("toy", (bad,), (), {"pin": secret})
    assert secret not in str(ei.value) and "option 'pin': must be an integer" in str(ei.value)
    assert public(SPEC, {"token": secret, "model": "m"}) == {"token": "***", "model": "m"}
    assert all(secret not in line for line in listing((Option("token", secret=True, default=secret),)))


def test_unset_and_not_given():
    assert settings(model="", endpoint=None)["model"] is None  # "" unsets an option whose default is None
    assert settings(depth=None)["depth"] == 3  # None (JSON null) is "not given"
    assert error(mode="") == "toy backend: option 'mode': must be one of fast, exact (got '')"
    assert check("toy", (Option("x", float, default=0.6, nullable=True),), (), {"x": ""}) == {"x": None}
    with pytest.raises(OptionError, match=r"option 'config' is required \(path of the file\)"):
        check("toy", (Option("config", required=True, help="path of the file"),), (), {})


def test_no_declared_options_means_none_accepted():
    with pytest.raises(OptionError, match="unknown option 'x'; it takes no options"):
        check("toy", (), (), {"x": 1})


def test_declarations_are_checked_when_written():
    with pytest.raises(TypeError, match="choices need type str"):
        Option("n", int, choices=("1",))
    with pytest.raises(TypeError, match="type must be one of"):
        Option("n", list)


@given(st.integers(min_value=1, max_value=10))
def test_an_int_in_range_is_taken_typed_or_as_text(n):
    assert settings(depth=n)["depth"] == settings(depth=str(n))["depth"] == settings(depth=float(n))["depth"] == n


@given(st.integers().filter(lambda n: not 1 <= n <= 10))
def test_an_int_out_of_range_is_refused_naming_the_range(n):
    assert error(depth=n) == f"toy backend: option 'depth': must be between 1 and 10 (got {n!r})"


@given(st.sampled_from(["fast", "exact"]), st.sampled_from([str.lower, str.upper, str.title]), st.text(" ", max_size=2))
def test_choices_ignore_case_and_spaces_and_are_stored_as_declared(choice, case, pad):
    assert settings(mode=pad + case(choice) + pad, token="t")["mode"] == choice


@given(st.sampled_from([(True, True), ("true", True), ("YES", True), ("on", True), (1, True),
                        (False, False), ("false", False), ("No", False), ("off", False), (0, False)]))
def test_bool_textual_forms(pair):
    raw, want = pair
    assert settings(verbose=raw)["verbose"] is want


# -- the built-in adapters ------------------------------------------------------------------------------------
def builtin_classes() -> list[type[MemoryBackend]]:
    return [registry.load(n) for n in registry.available() if registry.load(n).__module__.startswith("ufuzz.")]


def test_every_builtin_declares_its_options_and_their_defaults_check():
    classes = builtin_classes()
    assert {c.name for c in classes} >= {"embedded", "http", "mem0", "graphiti", "a-mem", "memos"}
    for cls in classes:
        assert cls.options_spec, cls.name
        names = [o.name for o in cls.options_spec]
        assert len(names) == len(set(names)), cls.name
        assert all(n in names for r in cls.option_rules for n in (r.option, *r.needs)), cls.name
        if cls.name == "http":
            with pytest.raises(ValueError, match="http backend: option 'config' is required"):
                cls.check_options({})
        else:
            assert set(cls.check_options({})) == set(names)


def test_the_issue_example_message(tmp_path):
    from ufuzz.backends.adapters.embedded import EmbeddedBackend

    with pytest.raises(ValueError) as ei:
        EmbeddedBackend(tmp_path, {"retrieval": "foo"})
    assert str(ei.value) == "embedded backend: option 'retrieval': must be one of dense, bm25, hybrid (got 'foo')"


def test_registry_checks_options_before_starting_a_worker(tmp_path):
    with pytest.raises(ValueError, match="mem0 backend: unknown option 'limit'; known options: user_id"):
        registry.create("mem0", tmp_path, {"limit": 3}, isolation="process")
    assert not (tmp_path / "worker.log").exists()


def test_describe_masks_secret_options(tmp_path):
    class Keyed(MemoryBackend):
        name = "keyed"
        options_spec = (Option("api_key", secret=True), Option("region", default="eu"))
        capabilities = build = release = retrieve = add = update = delete = get = list = None  # type: ignore

    b = Keyed(Path(tmp_path), {"api_key": "k-" + "77", "region": "us"})
    assert b.settings == {"api_key": "k-77", "region": "us"}
    assert b.describe() == {"backend": "keyed", "api_key": "***", "region": "us"}


def test_backends_command_lists_each_backends_options():
    out = CliRunner().invoke(main, ["backends"]).output
    embedded = out[out.index("embedded "):out.index("graphiti ")]
    assert re.search(r"\n      retrieval +dense\|bm25\|hybrid; default: dense — ", embedded)
    http = out[out.index("http "):out.index("mem0 ")]
    assert re.search(r"\n      config +text; required — path of the product TOML file", http)
    graphiti = out[out.index("graphiti "):out.index("http ")]
    assert "rule: write_mode=episode needs options llm_base_url and llm_model" in graphiti


def test_a_campaign_records_secret_options_masked():
    from ufuzz.backends import registry
    from ufuzz.engine.campaign import CampaignConfig

    class Vaulted(MemoryBackend):
        name = "vaulted"
        options_spec = (Option("token", secret=True), Option("region", default="eu"))
        capabilities = build = release = retrieve = add = update = delete = get = list = None  # type: ignore

    registry.register("vaulted", Vaulted)
    cfg = CampaignConfig(backend="vaulted", backend_options={"token": "t-" + "9f", "region": "us"})
    assert cfg.to_dict()["backend_options"] == {"token": "***", "region": "us"}


def test_path_options_are_made_absolute_and_nothing_else_is(tmp_path, monkeypatch):
    """A file option names the file in the working directory where the campaign starts; lanes run elsewhere."""
    from ufuzz.backends.options import absolute

    spec = (Option("config", path=True), Option("cache", path=True, nullable=True), Option("name"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    got = absolute(spec, {"config": "product.toml", "cache": "~/c.sqlite", "name": "x.toml"})
    assert got == {"config": str(tmp_path / "product.toml"), "cache": str(tmp_path / "home" / "c.sqlite"),
                   "name": "x.toml"}
    assert absolute(spec, {"config": "", "cache": None}) == {"config": "", "cache": None}  # unset stays unset
    assert absolute(spec, {"config": "/abs/p.toml"}) == {"config": str(Path("/abs/p.toml").resolve())}
