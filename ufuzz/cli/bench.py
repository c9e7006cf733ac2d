"""``ufuzz bench``: strategies against baselines."""

from __future__ import annotations

from pathlib import Path

import click

from ufuzz.cli.errors import BadInput, Unavailable
from ufuzz.cli.options import BUDGET, backend_options


@click.command()
@click.option("--backend", default="embedded", show_default=True, help="Registered backend name.")
@click.option("--budget", type=BUDGET, default=None, help="Executions per run.  [default: 2000; 500 with --planted]")
@click.option("--runs", type=click.IntRange(min=1, max=1000), default=3, show_default=True, help="Runs per strategy.")
@click.option("--strategies", default=",".join(("full", "random", "query-only", "state-only", "no-feedback")),
              show_default=True, help="Comma-separated strategy names, or 'all'.")
@click.option("--seeds", type=click.Path(dir_okay=False), default=None, help="Seed suite JSONL (default: shipped suite).")
@click.option("--seed", "base_seed", type=click.IntRange(min=-(2**63), max=2**63 - 1001), default=0, show_default=True,
              help="Base random seed: run i uses seed base+i.")
@click.option("--k", type=click.IntRange(min=1, max=100), default=5, show_default=True, help="Top-k retrieved.")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE", help="Backend option (repeatable).")
@click.option("--config", "config_file", default=None, help="Backend config file (TOML), e.g. for --backend http.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Output directory (default reports/bench-<backend>).")
@click.option("--no-replay", is_flag=True, help="Skip replaying the failures of each run.")
@click.option("--retrieval-visibility", "retrieval", type=click.Choice(["auto", "visible", "hidden"]),
              default="auto", show_default=True,
              help="hidden: every run observes and judges responses only (see `ufuzz run --help`).")
@click.option("--planted", is_flag=True,
              help="Measure the strategies on the planted defects and their clean twins (ufuzz.backends.adapters.planted): "
                   "bugs found, executions to the first failure of each planted class, false findings on the clean "
                   "twins. Runs its own backends and suites (no --backend, --seeds, --opt).")
@click.option("--search", type=click.Choice(["auto", "walk", "spread"]), default="auto", show_default=True,
              help="Phase 1 of every run (see `ufuzz run --help`).")
@click.option("--llm-base-url", default=None, help="OpenAI-compatible endpoint for the LLM uses.")
@click.option("--llm-model", default=None, help="Model name at that endpoint.")
@click.option("--llm-api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the API key (never logged).")
@click.option("--llm-uses", default="", help="Comma-separated LLM uses: paraphrase,answer,judge.")
def bench(backend: str, budget: int | None, runs: int, strategies: str, seeds: str | None, base_seed: int, k: int,
          opts: tuple[str, ...], config_file: str | None, out: str | None, no_replay: bool, retrieval: str, planted: bool, search: str,
          llm_base_url: str | None, llm_model: str | None, llm_api_key_env: str, llm_uses: str) -> None:
    """Compare search strategies: UF@B, Cov@B, causes, behaviour classes and curves, mean ± std over runs (from five
    runs on, Mann-Whitney U and A12 of full against each); --planted: bugs found on the planted defects."""
    from ufuzz.backends.protocol import BackendError, BackendUnavailable
    from ufuzz.reports.bench import BenchConfig, parse_strategies, render_table, run_bench
    from ufuzz.seeds.io import SeedFileError

    try:
        names = parse_strategies(strategies)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--strategies'") from None
    if planted:
        ctx = click.get_current_context()
        given = [f"--{n.replace('_', '-')}" for n in ("backend", "seeds", "opts", "config_file", "retrieval", "search",
                                                      "llm_base_url", "llm_uses")
                 if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]
        if given:
            raise click.UsageError(f"--planted runs its own backends and suites; it cannot be combined with "
                                   f"{', '.join(g.replace('--opts', '--opt').replace('--config-file', '--config') for g in given)}")
        _planted(budget or 500, runs, names, out, base_seed)
        return
    budget = budget or 2000
    if seeds is not None and not Path(seeds).is_file():
        raise click.BadParameter(f"no such file: {seeds}", param_hint="'--seeds'")
    options = backend_options(opts, config_file)
    campaign = {"retrieval": retrieval, "search": search, "llm_base_url": llm_base_url, "llm_model": llm_model,
                "llm_api_key_env": llm_api_key_env,
                "llm_uses": tuple(u.strip() for u in llm_uses.split(",") if u.strip())}
    from ufuzz.engine.campaign import CampaignConfig

    try:  # the settings must fit together before any run starts
        CampaignConfig(**campaign)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    defaults = CampaignConfig()
    cfg = BenchConfig(backend=backend, budget=budget, runs=runs, strategies=names, seeds=seeds, options=options,
                      out=out, base_seed=base_seed, replay=not no_replay, k=k,
                      campaign={name: v for name, v in campaign.items() if v != getattr(defaults, name)})
    from ufuzz.engine.startup import directory_problem

    problem = directory_problem(cfg.out_dir)
    if problem:
        raise click.BadParameter(f"cannot write the results: {problem}", param_hint="'--out'")
    try:
        result = run_bench(cfg, echo=lambda m: click.echo(m, err=True))
    except SeedFileError as exc:
        raise BadInput(str(exc)) from None
    except KeyError as exc:
        raise BadInput(str(exc).strip("'\"")) from None
    except (BackendUnavailable, BackendError) as exc:
        raise Unavailable(f"backend {backend!r}: {exc}") from None
    except ValueError as exc:
        raise BadInput(f"backend {backend!r}: {exc}") from None
    click.echo(render_table(result))
    click.echo(f"wrote {cfg.out_dir / 'bench.json'}, bench.md and curves.svg; total {result['wall_seconds']:.0f} s"
               + (" (interrupted)" if result["interrupted"] else ""))


def _planted(budget: int, runs: int, strategies: tuple[str, ...], out: str | None, base_seed: int) -> None:
    from ufuzz.engine.startup import directory_problem
    from ufuzz.reports.planted import PlantedConfig, render_planted, run_planted

    cfg = PlantedConfig(budget=budget, runs=runs, strategies=strategies, out=out, base_seed=base_seed)
    problem = directory_problem(cfg.out_dir)
    if problem:
        raise click.BadParameter(f"cannot write the results: {problem}", param_hint="'--out'")
    try:
        result = run_planted(cfg, echo=lambda m: click.echo(m, err=True))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(render_planted(result))
    click.echo(f"wrote {cfg.out_dir / 'planted.json'} and planted.md; total {result['wall_seconds']:.0f} s")
