"""The ``ufuzz`` command line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def parse_opts(values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in values:
        key, sep, raw = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {v!r}", param_hint="'--opt'")
        out[key.strip()] = _parse_value(raw.strip())
    return out


def load_config_file(path: str) -> dict[str, Any]:
    import tomllib

    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise click.BadParameter(f"no such file: {path}", param_hint="'--config'") from None
    except tomllib.TOMLDecodeError as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="'--config'") from None
    return data


@click.group()
@click.version_option(package_name="ufuzz")
def main() -> None:
    """ufuzz — a coverage-guided fuzzer for the persistent memory of LLM agents."""


# ---------------------------------------------------------------------------------------------------- run
@main.command()
@click.option("--backend", default="embedded", show_default=True, help="Registered backend name (see `ufuzz backends`).")
@click.option("--seeds", type=click.Path(dir_okay=False), default=None, help="Seed suite JSONL (default: shipped suite).")
@click.option("--budget", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Executions of U(q, M) on the backend (parents and mutants; cached parents not re-counted).")
@click.option("--seed", "rng_seed", type=int, default=0, show_default=True, help="Random seed (determinism).")
@click.option("--k", type=click.IntRange(min=1, max=100), default=5, show_default=True, help="Top-k retrieved.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Campaign directory (default campaigns/<time>).")
@click.option("--db", default=None, help="SQLAlchemy URL of the corpus store (default: SQLite in the campaign dir).")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE", help="Backend option (repeatable).")
@click.option("--config", "config_file", default=None, help="Backend config file (TOML), e.g. for --backend http.")
@click.option("--strategy", default="full", show_default=True, help="Search strategy (see `ufuzz strategies`).")
@click.option("--p", "rbo_p", type=click.FloatRange(min=0.0, max=1.0, min_open=True, max_open=True), default=0.9,
              show_default=True, help="RBO persistence for divergence.")
@click.option("--llm-base-url", default=None, help="OpenAI-compatible endpoint for the LLM uses.")
@click.option("--llm-model", default=None, help="Model name at that endpoint.")
@click.option("--llm-api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the API key (never logged).")
@click.option("--llm-uses", default="", help="Comma-separated LLM uses: paraphrase,answer,judge.")
@click.option("--explore-share", type=click.FloatRange(min=0.0, max=1.0, max_open=True), default=0.0,
              show_default=True, help="Chance that a step mutates a retained mutant while seed obligations remain "
                                      "(0 = obligations strictly first; strategy 'interleaved' uses 0.25).")
@click.option("--isolation", type=click.Choice(["auto", "process", "none"]), default="auto", show_default=True,
              help="Run the backend in a recyclable worker process: auto = for native libraries "
                   "(mem0, graphiti, a-mem), process = always, none = in the fuzzer's process.")
@click.option("--worker-max-rss-mb", type=click.FloatRange(min=0), default=None,
              help="Recycle the backend worker when its resident memory passes this many MB "
                   "(default: a third of physical memory; 0 = never).")
@click.option("--worker-recycle", type=click.IntRange(min=0), default=0, show_default=True,
              help="Recycle the backend worker after this many backend calls (0 = no limit).")
@click.option("--worker-timeout", type=click.FloatRange(min=0, min_open=True), default=600, show_default=True,
              help="Seconds one backend call may take before the worker is killed (an error record).")
@click.option("--force", is_flag=True, help="Overwrite an existing campaign directory.")
@click.option("--quiet", is_flag=True, help="No live status line.")
def run(backend: str, seeds: str | None, budget: int, rng_seed: int, k: int, out: str | None, db: str | None,
        opts: tuple[str, ...], config_file: str | None, strategy: str, rbo_p: float, llm_base_url: str | None,
        llm_model: str | None, llm_api_key_env: str, llm_uses: str, explore_share: float, isolation: str, worker_max_rss_mb: float | None,
        worker_recycle: int, worker_timeout: float, force: bool, quiet: bool) -> None:
    """Run a fuzzing campaign."""
    import time

    from ufuzz.backends.protocol import BackendError, BackendUnavailable
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.strategies import apply_strategy, strategy_names
    from ufuzz.seeds.io import SeedFileError

    options = parse_opts(opts)
    if config_file:
        options.setdefault("config", config_file)
    if strategy not in strategy_names():
        raise click.BadParameter(f"unknown strategy {strategy!r}; one of: {', '.join(strategy_names())}",
                                 param_hint="'--strategy'")
    out_dir = Path(out or f"campaigns/{time.strftime('%Y%m%d-%H%M%S')}")
    if (out_dir / "corpus.sqlite").exists() and not force and db is None:
        raise click.UsageError(f"{out_dir} already holds a campaign; pass --force to overwrite or choose --out")
    uses = tuple(u.strip() for u in llm_uses.split(",") if u.strip())
    try:
        cfg = CampaignConfig(backend=backend, backend_options=options, seeds=seeds, budget=budget, seed=rng_seed,
                             k=k, out=str(out_dir), db=db, p=rbo_p, llm_base_url=llm_base_url, llm_model=llm_model,
                             llm_api_key_env=llm_api_key_env, llm_uses=uses, explore_share=explore_share,
                             isolation=isolation,
                             worker_max_rss_mb=worker_max_rss_mb, worker_recycle=worker_recycle,
                             worker_timeout=worker_timeout)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    apply_strategy(cfg, strategy)
    if force and out_dir.exists():
        import shutil

        shutil.rmtree(out_dir)
    try:
        campaign = Campaign(cfg)
    except SeedFileError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        summary = _run_with_status(campaign, quiet)
    except BackendUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]) if exc.args else str(exc), param_hint="'--backend'") from None
    except (BackendError, ValueError) as exc:
        raise click.ClickException(f"backend {backend!r}: {exc}") from None
    _print_summary(summary, out_dir)
    if summary["status"] == "interrupted":
        sys.exit(130)


def _run_with_status(campaign, quiet: bool) -> dict[str, Any]:
    if quiet or not sys.stderr.isatty():
        return campaign.run()
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    console = Console(stderr=True)

    def line(p) -> Text:
        cov = f"{p.coverage}/{p.coverage_total}" if p.coverage_total else str(p.coverage)
        return Text(f"execs {p.executions}/{p.budget}  phase {p.phase}  uncovered {p.uncovered_obligations}  "
                    f"valid {p.mutants_valid}  rejected {p.mutants_rejected}  retained {p.retained}  "
                    f"coverage {cov}  unique failures {p.unique_failures}  errors {p.errors}")

    with Live(line(campaign.progress), console=console, refresh_per_second=4, transient=False) as live:
        return campaign.run(on_progress=lambda p: live.update(line(p)))


def _print_summary(s: dict[str, Any], out_dir: Path) -> None:
    click.echo(f"campaign {s['campaign']} {s['status']}: {s['executions']} executions "
               f"(budget {s['budget']}), {s['mutants_valid']} valid mutants, {s['mutants_rejected']} rejected, "
               f"{s['retained']} retained")
    click.echo(f"coverage {s['coverage']}/{s['coverage_total']} memories; obligations "
               f"{s['obligations_covered']}/{s['obligations']}; errors {s['errors']}")
    if s.get("worker"):
        w = s["worker"]
        click.echo(f"backend worker: {w['starts']} start(s), {w['recycles']} recycled, {w['crashes']} crashed, "
                   f"{w['rebuilds']} states rebuilt, peak {w['peak_rss_mb']:.0f} MB")
    click.echo(f"unique failures: {s['unique_failures']}")
    for op, n in sorted(s["failures_by_operator"].items()):
        click.echo(f"  {op:16s} {n}")
    click.echo(f"results in {out_dir}")


# ---------------------------------------------------------------------------------------------------- status
@main.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(campaign_dir: str, db: str | None, as_json: bool) -> None:
    """Summarise a campaign: executions, coverage, retained, unique failures by operator and kind."""
    from ufuzz.reports.status import campaign_status

    try:
        st = campaign_status(Path(campaign_dir), db)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(st, indent=2, sort_keys=True, default=str))
        return
    from ufuzz.reports.status import render_status

    click.echo(render_status(st))


# ---------------------------------------------------------------------------------------------------- seeds
@main.group()
def seeds() -> None:
    """Build or import seed suites."""


@seeds.command("synth")
@click.option("--personas", type=click.IntRange(min=1, max=10000), default=12, show_default=True)
@click.option("--seed", "rng_seed", type=int, default=7, show_default=True)
@click.option("--queries", type=click.IntRange(min=1, max=100), default=8, show_default=True,
              help="Queries per persona.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def seeds_synth(personas: int, rng_seed: int, queries: int, output: str) -> None:
    """Synthetic persona checkpoints with templated queries and references."""
    from ufuzz.seeds.io import write_suite
    from ufuzz.seeds.synth import header, synthesize

    suite = synthesize(personas=personas, seed=rng_seed, queries_per_persona=queries)
    write_suite(suite, output, header=header(personas, rng_seed, queries))
    click.echo(f"wrote {len(suite.seeds)} seeds over {len(suite.checkpoints)} checkpoints to {output}")


@seeds.command("import")
@click.argument("fmt", metavar="FORMAT")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
@click.option("--llm-base-url", default=None, help="OpenAI-compatible endpoint for the LLM field extractor.")
@click.option("--llm-model", default=None, help="Model name for the LLM field extractor.")
@click.option("--llm-api-key-env", default="OPENAI_API_KEY", show_default=True)
def seeds_import(fmt: str, file: str, output: str, llm_base_url: str | None, llm_model: str | None,
                 llm_api_key_env: str) -> None:
    """Import a benchmark file (locomo, longmemeval, memops, meme, halumem) as a seed suite."""
    from ufuzz.seeds.importers import IMPORTERS, import_file
    from ufuzz.seeds.io import write_suite

    if fmt not in IMPORTERS:
        raise click.BadParameter(f"unknown format {fmt!r}; one of: {', '.join(sorted(IMPORTERS))}",
                                 param_hint="'FORMAT'")
    if not Path(file).exists():
        raise click.BadParameter(f"no such file: {file}", param_hint="'FILE'")
    extractor = None
    if llm_base_url:
        from ufuzz.llm import CallCache, LLMClient, LLMConfig
        from ufuzz.llm.uses import FieldExtractor

        config = LLMConfig(base_url=llm_base_url, model=llm_model or "default", api_key_env=llm_api_key_env)
        extractor = FieldExtractor(LLMClient(config, CallCache()))
    try:
        result = import_file(fmt, file, extractor=extractor)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if not result.suite.seeds:
        raise click.ClickException(f"{file}: no seed could be imported (dropped: {dict(result.dropped)})")
    write_suite(result.suite, output, header={"generator": f"ufuzz seeds import {fmt}", "source": Path(file).name})
    click.echo(f"wrote {len(result.suite.seeds)} seeds over {len(result.suite.checkpoints)} checkpoints to {output}")
    for what, n in sorted(result.warnings.items()):
        click.echo(f"  warning: {what}: {n}")
    for what, n in sorted(result.dropped.items()):
        click.echo(f"  dropped: {what}: {n}")


# ---------------------------------------------------------------------------------------------------- backends
@main.command()
def backends() -> None:
    """List registered backends, their capabilities and whether their dependencies are installed."""
    from ufuzz.backends import registry

    for name, spec in registry.available().items():
        try:
            cls = registry.load(name)
            ok, hint = cls.dependencies_installed()
        except Exception as exc:  # a broken third-party entry point must not hide the others
            click.echo(f"{name:10s} {spec}\n    cannot load: {exc}")
            continue
        state = "installed" if ok else f"missing — {hint}"
        click.echo(f"{name:10s} {spec}  [{state}]")
        caps = getattr(cls, "static_capabilities", None)
        if callable(caps):
            c = caps()
            flags = [k for k, v in c.to_dict().items() if isinstance(v, bool) and v]
            click.echo(f"    capabilities: {', '.join(flags)}")
            if c.notes:
                click.echo(f"    notes: {c.notes}")
        click.echo("    runs in: " + ("a recyclable worker process (--isolation auto; 'none' keeps it in process)"
                                      if getattr(cls, "isolate", False) else "the fuzzer's process"))


# ---------------------------------------------------------------------------------------------------- cache
@main.group()
def cache() -> None:
    """The persistent LLM call cache."""


@cache.command("stats")
@click.option("--path", default=None, help="Cache file (default: $UFUZZ_CACHE_DIR/llm_calls.sqlite).")
def cache_stats_cmd(path: str | None) -> None:
    from ufuzz.llm.cache import cache_stats

    click.echo(json.dumps(cache_stats(path), indent=2, sort_keys=True, default=str))


@cache.command("clear")
@click.option("--path", default=None)
def cache_clear_cmd(path: str | None) -> None:
    from ufuzz.llm.cache import cache_clear

    click.echo(f"removed {cache_clear(path)} cached calls")


# ---------------------------------------------------------------------------------------------------- replay
@main.command()
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def replay(campaign_dir: str, db: str | None, as_json: bool) -> None:
    """Rebuild every unique failure of a campaign on a fresh backend and check that it reproduces."""
    from ufuzz.backends.protocol import BackendError
    from ufuzz.engine.replay import replay_campaign
    from ufuzz.reports.replay import render_replay

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    try:
        report = replay_campaign(Path(campaign_dir), db)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    except BackendError as exc:
        raise click.ClickException(f"cannot start the campaign's backend: {exc}") from None
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str))
    else:
        click.echo(render_replay(report))


# ---------------------------------------------------------------------------------------------------- bench
@main.command()
@click.option("--backend", default="embedded", show_default=True, help="Registered backend name.")
@click.option("--budget", type=click.IntRange(min=1), default=2000, show_default=True, help="Executions per run.")
@click.option("--runs", type=click.IntRange(min=1), default=3, show_default=True, help="Runs per strategy.")
@click.option("--strategies", default=",".join(("full", "random", "query-only", "state-only", "no-feedback")),
              show_default=True, help="Comma-separated strategy names, or 'all'.")
@click.option("--seeds", type=click.Path(dir_okay=False), default=None, help="Seed suite JSONL (default: shipped suite).")
@click.option("--seed", "base_seed", type=int, default=0, show_default=True,
              help="Base random seed: run i uses seed base+i.")
@click.option("--k", type=click.IntRange(min=1, max=100), default=5, show_default=True, help="Top-k retrieved.")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE", help="Backend option (repeatable).")
@click.option("--config", "config_file", default=None, help="Backend config file (TOML), e.g. for --backend http.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Output directory (default reports/bench-<backend>).")
@click.option("--no-replay", is_flag=True, help="Skip replaying the failures of each run.")
def bench(backend: str, budget: int, runs: int, strategies: str, seeds: str | None, base_seed: int, k: int,
          opts: tuple[str, ...], config_file: str | None, out: str | None, no_replay: bool) -> None:
    """Compare search strategies: UF@B, Cov@B and curves, mean ± std over runs."""
    from ufuzz.backends.protocol import BackendError, BackendUnavailable
    from ufuzz.reports.bench import BenchConfig, parse_strategies, render_table, run_bench
    from ufuzz.seeds.io import SeedFileError

    try:
        names = parse_strategies(strategies)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--strategies'") from None
    if seeds is not None and not Path(seeds).is_file():
        raise click.BadParameter(f"no such file: {seeds}", param_hint="'--seeds'")
    options = parse_opts(opts)
    if config_file:
        options.setdefault("config", config_file)
    cfg = BenchConfig(backend=backend, budget=budget, runs=runs, strategies=names, seeds=seeds, options=options,
                      out=out, base_seed=base_seed, replay=not no_replay, k=k)
    try:
        result = run_bench(cfg, echo=lambda m: click.echo(m, err=True))
    except SeedFileError as exc:
        raise click.ClickException(str(exc)) from None
    except KeyError as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    except BackendUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    except (BackendError, ValueError) as exc:
        raise click.ClickException(f"backend {backend!r}: {exc}") from None
    click.echo(render_table(result))
    click.echo(f"wrote {cfg.out_dir / 'bench.json'}, bench.md and curves.svg; total {result['wall_seconds']:.0f} s"
               + (" (interrupted)" if result["interrupted"] else ""))



# ---------------------------------------------------------------------------------------------------- corpus
@main.group()
def corpus() -> None:
    """Regression corpora: export a campaign's unique failures; check that they still reproduce."""


@corpus.command("export")
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Corpus file (JSONL) to write.")
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--max", "max_records", type=click.IntRange(min=1), default=None,
              help="Keep the first N failures in discovery order (plus one per operator and kind).")
def corpus_export(campaign_dir: str, output: str, db: str | None, max_records: int | None) -> None:
    """Write a campaign's unique failures as a self-contained, replayable regression corpus."""
    from ufuzz.corpus.regression import export_campaign

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    try:
        res = export_campaign(Path(campaign_dir), output, db, max_records=max_records)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    ops = ", ".join(f"{op} {n}" for op, n in res.by_operator().items())
    click.echo(f"wrote {len(res.records)} of {res.unique_failures} unique failures over {res.checkpoints} "
               f"checkpoints to {res.path} ({res.size / 1024:.0f} KB): {ops}")
    if res.skipped:
        click.echo(f"  skipped {len(res.skipped)} that cannot be rebuilt, e.g. {res.skipped[0][1]}", err=True)


@corpus.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--backend", default=None, help="Backend to replay on (default: the one recorded in the header).")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE",
              help="Backend option (repeatable; overrides the header's options for the recorded backend).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--changed-only", is_flag=True, help="List only the records that changed status.")
def corpus_check(file: str, backend: str | None, opts: tuple[str, ...], as_json: bool, changed_only: bool) -> None:
    """Replay every record of a regression corpus on a fresh backend.

    Exit status: 0 every record still reproduces, 1 some record changed status (fixed, fails differently,
    parent broken, backend error), 2 bad input (malformed file, unknown backend or options).
    """
    from ufuzz.backends.protocol import BackendError, BackendUnavailable
    from ufuzz.corpus.regression import CorpusFileError, load_corpus
    from ufuzz.engine.regression import check_corpus
    from ufuzz.reports.regression import render_check

    def bad(message: str) -> None:
        click.echo(f"Error: {message}", err=True)
        sys.exit(2)

    options = parse_opts(opts)
    try:
        rc = load_corpus(file)
    except CorpusFileError as exc:
        bad(str(exc))
    try:
        report = check_corpus(rc, backend=backend, options=options)
    except KeyError as exc:
        bad(f"--backend: {str(exc.args[0]) if exc.args else exc}")
    except BackendUnavailable as exc:
        bad(str(exc))
    except (BackendError, ValueError) as exc:
        bad(f"cannot start backend {backend or rc.backend!r}: {exc}")
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str))
    else:
        click.echo(render_check(report, all_rows=not changed_only))
    sys.exit(report.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
