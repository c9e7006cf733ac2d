"""``ufuzz seeds``: synthesize or import seed suites."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
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
