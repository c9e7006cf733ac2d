"""``ufuzz run``: a fuzzing campaign, with a live display (or plain progress lines in CI).

``--resume DIR`` continues a killed, interrupted or errored campaign.

Exit status (:mod:`ufuzz.engine.ending`): the campaign's end reason — 0 budget spent, 4 exhausted (nothing left
to try), 5 time limit (``--max-time``), 6 LLM token budget spent (``--max-llm-tokens``), 3 error (a failed
preflight, ``--max-consecutive-errors`` backend errors in a row, every execution a backend error, a corpus that cannot be written, a crash), 130 interrupted (Ctrl-C or
SIGTERM) — except that 1 is returned for failures ``--fail-on`` counts (``new``: a behaviour the ``--baseline``
corpus lacks or had fixed; ``any``: any unique failure) when the campaign did not end in error or interruption. Before a campaign
starts (:mod:`ufuzz.cli.errors`): 2 is bad input (an option, a seed file named as ``file:line``, a corpus that
is not one), 3 an environment that cannot be used (a backend that does not start, a database locked or not
answering, a directory in use by a live campaign: :mod:`ufuzz.engine.dirlock`), 130 an interrupt.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ufuzz.cli.errors import BadInput, Unavailable
from ufuzz.cli.options import BUDGET, COUNT, SEED, Finite, backend_options, parse_opts
from ufuzz.engine.ending import EXIT_CODES, INTERNAL_ERROR
from ufuzz.engine.parallel.batching import DEFAULT_BATCH, MAX_BATCH, SERIAL_BATCH


@click.command()
@click.option("--backend", default="embedded", show_default=True, help="Registered backend name (see `ufuzz backends`).")
@click.option("--seeds", type=click.Path(dir_okay=False), default=None, help="Seed suite JSONL (default: shipped suite).")
@click.option("--budget", type=BUDGET, default=2000, show_default=True,
              help="Executions of U(q, M) on the backend (parents and mutants; cached parents not re-counted).")
@click.option("--seed", "rng_seed", type=SEED, default=0, show_default=True, help="Random seed (determinism).")
@click.option("--k", type=click.IntRange(min=1, max=100), default=5, show_default=True, help="Top-k retrieved.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Campaign directory (default campaigns/<time>).")
@click.option("--db", default=None, help="SQLAlchemy URL of the corpus store (default: SQLite in the campaign dir).")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE", help="Backend option (repeatable).")
@click.option("--config", "config_file", default=None, help="Backend config file (TOML), e.g. for --backend http.")
@click.option("--strategy", default="full", show_default=True, help="Search strategy (see `ufuzz strategies`).")
@click.option("--p", "rbo_p", type=Finite(min=0.0, max=1.0, min_open=True, max_open=True), default=0.9,
              show_default=True, help="RBO persistence for divergence.")
@click.option("--llm-base-url", default=None, help="OpenAI-compatible endpoint for the LLM uses.")
@click.option("--llm-model", default=None, help="Model name at that endpoint.")
@click.option("--llm-api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the API key (never logged).")
@click.option("--llm-uses", default="", help="Comma-separated LLM uses: paraphrase,answer,judge.")
@click.option("--reader", type=click.Choice(["none", "top-evidence"]), default="none", show_default=True,
              help="A made-up responder for backends that do not answer: top-evidence echoes the top memory. "
                   "Its failures are labelled as the reader's and never counted as the memory system's.")
@click.option("--reader-threshold", type=Finite(min=-1e9, max=1e9), default=None,
              help="Score below which the top-evidence reader abstains (default: the backend's hint).")
@click.option("--abstain-phrase", "abstain_phrases", multiple=True, metavar="TEXT",
              help="What the --llm-uses answer answerer says when it abstains, beside the built-in phrases "
                   "(repeatable; a product declares its own in its TOML: [answer] abstain_phrases).")
@click.option("--no-default-abstain-phrases", "no_default_abstain", is_flag=True,
              help="Only the --abstain-phrase phrases count as the answerer's abstention (not the built-in ones "
                   "listed in ufuzz/oracles/matching.py).")
@click.option("--llm-timeout", type=Finite(min=0, max=3600, min_open=True), default=30, show_default=True,
              help="Seconds one LLM request may take before it counts as failed.")
@click.option("--llm-retries", type=click.IntRange(min=0, max=10), default=2, show_default=True,
              help="Retries of a failed LLM request (timeouts, connection errors, HTTP 429/5xx), with "
                   "exponential backoff; a call that still fails is an error record, never a failure.")
@click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Your own prompts for the LLM uses: DIR/<use>.txt or DIR/<use>.json ({\"version\", \"system\"}) "
                   "for paraphrase, answer, judge, fields; recorded with the campaign (a changed prompt is a "
                   "new cache key).")
@click.option("--retrieval-visibility", "retrieval", type=click.Choice(["auto", "visible", "hidden"]),
              default="auto", show_default=True,
              help="hidden: observe, judge and feed back the responses only, as with a product that only answers "
                   "(the backend still retrieves for its answer or the --llm-uses answer answerer); auto: as the "
                   "backend exposes it.")
@click.option("--explore-share", type=Finite(min=0.0, max=1.0, max_open=True), default=0.0,
              show_default=True, help="Chance that a step mutates a retained mutant while seed obligations remain "
                                      "(0 = obligations strictly first; strategy 'interleaved' uses 0.25).")
@click.option("--search", type=click.Choice(["auto", "walk", "spread"]), default="auto", show_default=True,
              help="Phase 1: walk the seeds one by one, or spread over them (greedy cover of the memories their "
                   "evidence names, operators by what their mutants change in retrieval); auto: spread when the "
                   "seeds' obligations (seed x operator x target) are more than the budget.")
@click.option("--isolation", type=click.Choice(["auto", "process", "none"]), default="auto", show_default=True,
              help="Run the backend in a recyclable worker process: auto = for native libraries "
                   "(mem0, graphiti, a-mem), process = always, none = in the fuzzer's process.")
@click.option("--worker-max-rss-mb", type=Finite(min=0, max=10**7), default=None,
              help="Recycle the backend worker when its resident memory passes this many MB "
                   "(default: a third of physical memory; 0 = never).")
@click.option("--worker-recycle", type=COUNT, default=0, show_default=True,
              help="Recycle the backend worker after this many backend calls (0 = no limit).")
@click.option("--worker-timeout", type=Finite(min=0, max=86400, min_open=True), default=600, show_default=True,
              help="Seconds one backend call may take before the worker is killed (an error record).")
@click.option("--workers", type=click.IntRange(min=1, max=4096), default=1, show_default=True,
              help="Run N lanes at once, each with its own backend (results applied in task order: with the same "
                   "--batch, the campaign of --workers 1, faster).")
@click.option("--max-concurrency", "--concurrency", "max_concurrency", type=click.IntRange(min=1, max=1024), default=1,
              show_default=True,
              help="Keep up to N LLM requests (answer, judge, paraphrase) and N backend calls in flight from this "
                   "process (thread lanes over one backend; promptfoo's --max-concurrency, Inspect's "
                   "max_connections). Backends whose calls wait on the network (http) overlap them; others run one "
                   "call at a time while the LLM requests overlap. With --workers W: W processes of N. Results are "
                   "applied in task order: with the same --batch, any N gives the campaign of N = 1, faster (up to "
                   "2 x --batch calls are in flight).")
@click.option("--batch", type=click.IntRange(min=1, max=MAX_BATCH), default=None,
              help=f"Tasks the scheduler draws before it sees their results. Part of the campaign, like --seed: the "
                   f"same --seed and --batch give the same campaign at any --workers/--max-concurrency; two batches "
                   f"are in flight at most, so raise it with concurrency above 2 x batch. [default: {SERIAL_BATCH} "
                   f"(step by step) with one lane and --max-concurrency 1; {DEFAULT_BATCH} with more lanes, "
                   f"concurrency or Ray]")
@click.option("--llm-rpm", type=Finite(min=0, max=1e9, min_open=True), default=None,
              help="Client-side limit: LLM requests per minute (spaced evenly; split among process lanes).")
@click.option("--llm-tpm", type=Finite(min=0, max=1e12, min_open=True), default=None,
              help="Client-side limit: LLM tokens per minute, from the usage the endpoint reports.")
@click.option("--llm-rate-limit-wait", type=Finite(min=0, max=86400), default=600, show_default=True,
              help="Seconds one LLM call may spend waiting out HTTP 429 / 503 answers (their Retry-After, every "
                   "request pausing) before it fails; these waits do not use up --llm-retries.")
@click.option("--llm-price", default=None, metavar="IN,OUT",
              help="USD per million prompt and completion tokens, for the estimated cost in status, summary.json "
                   "and the report (e.g. 0.15,0.60).")
@click.option("--max-llm-tokens", type=click.IntRange(min=1), default=None,
              help="Token budget: end the campaign cleanly (status llm_budget_spent, exit 6) once its LLM calls "
                   "have used this many tokens (the calls in flight finish first).")
@click.option("--ray-address", default=None, metavar="ADDRESS",
              help="Run the lanes as Ray actors: local (a cluster started here), auto, HOST:PORT or "
                   "ray://HOST:PORT; the corpus then goes to PostgreSQL (--db postgresql://...) unless local.")
@click.option("--max-time", "max_time", default=None, metavar="DURATION",
              help="Stop cleanly after this wall time (600, 90s, 30m, 2h); the campaign's status is then time_limit.")
@click.option("--baseline", type=click.Path(dir_okay=False), default=None,
              help="A regression corpus of known failures (`ufuzz corpus export`): each failure found is marked "
                   "known, new or regressed by its behaviour (class, and whether it returns a memory the system "
                   "no longer holds), not by key: a known bug on another fact, wording or seed is known.")
@click.option("--fail-on", type=click.Choice(["new", "any", "never"]), default=None,
              help="Exit 1 when the campaign found new behaviours (new or regressed against --baseline), any "
                   "failure, or never "
                   "[default: new with --baseline, else never].")
@click.option("--match-baseline", is_flag=True,
              help="Take --seed, --budget, --strategy, --k and --batch from the --baseline corpus's campaign (unless "
                   "given): what examples/ci/nightly.sh does.")
@click.option("--junit", "junit_out", default=None, type=click.Path(dir_okay=False),
              help="Write a JUnit XML report: one test case per behaviour (new or regressed against --baseline: "
                   "a failure; known: skipped, with a message; a baseline behaviour not met: skipped), with times.")
@click.option("--progress-every", type=click.IntRange(min=0, max=10**9), default=0, show_default=True,
              help="Without a terminal: also print a progress line every N executions (besides every 10 s).")
@click.option("--max-consecutive-errors", type=click.IntRange(min=0, max=10**9), default=20, show_default=True,
              help="End the campaign (reason error, exit 3) after this many backend errors in a row (checked "
                   "between batches: the batch that reached it finishes first); 0 = never.")
@click.option("--readback/--no-readback", default=True, show_default=True,
              help="Read every verified add or update back: search a copy of the state for the written text "
                   "beside a fresh memory of the same text and time (a search index not kept with the store is a "
                   "state failure, write_not_found). Only where search returns the stored memories and states "
                   "can be copied; it costs a copy, two adds and up to two searches per write.")
@click.option("--preflight/--no-preflight", default=True, show_default=True,
              help="A round trip through the backend (build, add, search, get, list, delete) and the LLM "
                   "endpoint before the campaign: an unreachable backend fails at once (exit 3), nothing written.")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Continue the killed, interrupted or errored campaign in DIR to its budget (or to --budget), "
                   "with its own configuration (--db if its corpus is not DIR's; --opt for secrets it did not "
                   "store).")
@click.option("--force", is_flag=True, help="Overwrite an existing campaign directory.")
@click.option("--quiet", is_flag=True, help="No live display and no progress lines.")
@click.pass_context
def run(ctx: click.Context, backend: str, seeds: str | None, budget: int, rng_seed: int, k: int, out: str | None,
        db: str | None, opts: tuple[str, ...], config_file: str | None, strategy: str, rbo_p: float,
        llm_base_url: str | None, llm_model: str | None, llm_api_key_env: str, llm_uses: str, reader: str,
        reader_threshold: float | None, llm_timeout: float, llm_retries: int, prompts_dir: str | None, retrieval: str,
        explore_share: float, search: str, isolation: str,
        worker_max_rss_mb: float | None, worker_recycle: int, worker_timeout: float, workers: int,
        max_concurrency: int, batch: int | None, llm_rpm: float | None, llm_tpm: float | None, llm_rate_limit_wait: float,
        llm_price: str | None, max_llm_tokens: int | None,
        ray_address: str | None, max_time: str | None,
        baseline: str | None, fail_on: str | None, match_baseline: bool, junit_out: str | None,
        progress_every: int, max_consecutive_errors: int, readback: bool,
        preflight: bool, resume_dir: str | None, force: bool, quiet: bool,
        abstain_phrases: tuple[str, ...] = (), no_default_abstain: bool = False) -> None:
    """Run a fuzzing campaign (or continue one: --resume DIR)."""
    import time

    from ufuzz.cli.progress import parse_duration, run_with_progress
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.startup import StartError, check_start
    from ufuzz.engine.strategies import apply_strategy, strategy_names
    from ufuzz.seeds.io import SeedFileError

    if resume_dir is not None:
        _resume(ctx, resume_dir, db=db, opts=opts, budget=budget, quiet=quiet, progress_every=progress_every,
                max_consecutive_errors=max_consecutive_errors, preflight=preflight, ray_address=ray_address)
        return
    options = backend_options(opts, config_file)
    if strategy not in strategy_names():
        raise click.BadParameter(f"unknown strategy {strategy!r}; one of: {', '.join(strategy_names())}",
                                 param_hint="'--strategy'")
    out_dir = Path(out or f"campaigns/{time.strftime('%Y%m%d-%H%M%S')}")
    _refuse_busy(out_dir)
    held = [n for n in ("corpus.sqlite", "campaign.json") if (out_dir / n).exists()]
    if held and not force:
        raise click.UsageError(f"{out_dir} already holds a campaign; pass --force to overwrite or choose --out")
    uses = tuple(u.strip() for u in llm_uses.split(",") if u.strip())
    try:
        seconds = parse_duration(max_time) if max_time is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--max-time'") from None
    known = _load_baseline(baseline)
    if match_baseline:
        rng_seed, budget, strategy, k, batch = _match_baseline(ctx, known, rng_seed, budget, strategy, k, batch)
    price = _parse_price(llm_price)
    prompts = None
    if prompts_dir is not None:
        from ufuzz.llm.prompts import load_prompts

        try:
            prompts = load_prompts(prompts_dir)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--prompts'") from None
    try:
        cfg = CampaignConfig(backend=backend, backend_options=options, seeds=seeds, budget=budget, seed=rng_seed,
                             k=k, out=str(out_dir), db=db, p=rbo_p, llm_base_url=llm_base_url, llm_model=llm_model,
                             llm_api_key_env=llm_api_key_env, llm_uses=uses, reader=reader,
                             reader_threshold=reader_threshold, llm_timeout=llm_timeout,
                             llm_retries=llm_retries, prompts=prompts, retrieval=retrieval,
                             explore_share=explore_share, search=search, isolation=isolation,
                             worker_max_rss_mb=worker_max_rss_mb, worker_recycle=worker_recycle,
                             worker_timeout=worker_timeout, workers=workers, ray_address=ray_address,
                             max_time=seconds, max_concurrency=max_concurrency, batch=batch, llm_rpm=llm_rpm,
                             llm_tpm=llm_tpm,
                             llm_rate_limit_wait=llm_rate_limit_wait, llm_price=price,
                             max_llm_tokens=max_llm_tokens,
                             max_consecutive_errors=max_consecutive_errors, preflight=preflight,
                             readback=readback)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    _set_abstention(cfg, abstain_phrases, no_default_abstain)
    apply_strategy(cfg, strategy)
    mismatch = _baseline_mismatch(known, cfg, strategy)
    try:  # everything a user can get wrong is checked before anything is created or overwritten
        check_start(out_dir, db)
        campaign = Campaign(cfg)
        _size_notes(campaign, quiet)
        _caveats(cfg)
    except StartError as exc:
        _start_error(exc)
    except SeedFileError as exc:
        raise BadInput(str(exc)) from None
    guard = replaced = None
    if force and out_dir.exists():  # the old campaign is ours (locked) from here until it is dropped
        guard = _lock(out_dir)
        replaced = _set_aside(out_dir)
        guard.moved(replaced)

    def drop() -> None:
        if guard is not None:
            guard.release()
        _drop(replaced)

    try:
        with _run_errors(backend, out_dir, f"{out_dir}: " if db is None else "", "'--db'" if db is not None else None):
            summary = run_with_progress(campaign, quiet=quiet, every_n=progress_every, on_start=drop)
    finally:
        if replaced is not None:  # a start that failed leaves the replaced campaign as it was
            if out_dir.exists():
                drop()
            elif replaced.exists():
                replaced.rename(out_dir)
                guard.moved(out_dir)
                guard.release()
    verdict = None
    if known is not None and summary["status"] != "error":
        verdict = _mark_baseline(out_dir, db, summary, known, mismatch)
    if junit_out:
        _write_junit(out_dir, db, summary, verdict, junit_out, baseline_given=known is not None)
    _end(summary, out_dir, fail_on=fail_on or ("new" if verdict is not None else "never"), verdict=verdict)


#: options ``--resume`` may be given with (everything else is the campaign's own configuration)
RESUME_OPTIONS = {"resume_dir", "db", "opts", "budget", "quiet", "progress_every", "max_consecutive_errors",
                  "preflight", "ray_address"}


def _resume(ctx: click.Context, resume_dir: str, *, db: str | None, opts: tuple[str, ...], budget: int,
            quiet: bool, progress_every: int, max_consecutive_errors: int, preflight: bool,
            ray_address: str | None = None) -> None:
    from sqlalchemy.exc import SQLAlchemyError

    from ufuzz.cli.progress import run_with_progress
    from ufuzz.corpus.store import CorpusDatabaseError
    from ufuzz.engine.campaign import Campaign, ResumeError
    from ufuzz.engine.dirlock import DirectoryLocked
    from ufuzz.engine.ending import describe

    given = sorted(name for name in ctx.params if name not in RESUME_OPTIONS
                   and ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE)
    if given:
        flag = {p.name: p.opts[0] for p in ctx.command.params if p.opts}
        flags = ", ".join(flag.get(n, n) for n in given)
        raise click.UsageError(f"--resume continues a campaign with its own configuration: {flags} cannot be "
                               "changed (only --budget, --db, --opt, --max-consecutive-errors, --[no-]preflight, "
                               "--ray-address, --quiet, --progress-every)")
    explicit = ctx.get_parameter_source("budget") is click.core.ParameterSource.COMMANDLINE
    out_dir = Path(resume_dir)
    if not out_dir.is_dir():
        raise click.BadParameter(f"{out_dir}: no such campaign directory", param_hint="'--resume'")
    try:
        campaign = Campaign.resume(out_dir, db, budget=budget if explicit else None,
                                   backend_options=parse_opts(opts),
                                   max_consecutive_errors=max_consecutive_errors, preflight=preflight,
                                   ray_address=ray_address)
    except ResumeError as exc:
        raise click.BadParameter(str(exc), param_hint="'--resume'") from None
    except CorpusDatabaseError as exc:
        _database_error(exc, "", "'--db'" if db else "'--resume'")
    except DirectoryLocked as exc:
        raise Unavailable(str(exc)) from None
    except SQLAlchemyError as exc:
        raise Unavailable(f"corpus database of {out_dir}: {describe(exc)}") from None
    except (FileNotFoundError, ValueError) as exc:
        raise BadInput(str(exc)) from None
    with _run_errors(campaign.config.backend, out_dir, "", "'--db'" if db else "'--resume'"):
        summary = run_with_progress(campaign, quiet=quiet, every_n=progress_every)
    _end(summary, out_dir)


def _parse_price(text: str | None) -> tuple[float, float] | None:
    """``--llm-price IN,OUT`` as two non-negative finite numbers."""
    if text is None:
        return None
    import math

    parts = text.split(",")
    try:
        price = tuple(float(p) for p in parts)
    except ValueError:
        price = ()
    if len(price) != 2 or not all(math.isfinite(p) and p >= 0 for p in price):
        raise click.BadParameter(f"{text!r}: give two non-negative numbers IN,OUT (USD per million prompt and "
                                 "completion tokens), e.g. 0.15,0.60", param_hint="'--llm-price'")
    return price  # type: ignore[return-value]


def _caveats(cfg: Any) -> None:
    """What the backend's options leave unseen (``MemoryBackend.caveats``), said before the campaign runs — also
    with --quiet: a nightly log should carry it."""
    from ufuzz.backends import registry

    try:
        cls = registry.load(cfg.backend)
    except Exception:  # noqa: BLE001 - a backend that cannot load is reported where the campaign starts it
        return
    for caveat in cls.caveats(cfg.backend_options):
        click.echo(f"warning: {caveat}", err=True)


def _size_notes(campaign: Any, quiet: bool) -> None:
    """Large checkpoints: say so, and print each set-up phase with its time (set-up can take minutes before the
    first progress line)."""
    import time

    from ufuzz.engine.startup import size_notes

    notes = size_notes(campaign.suite.checkpoints)
    if quiet or not notes:
        return
    for note in notes:
        click.echo(f"note: {note}", err=True)
    t0 = time.monotonic()
    campaign.on_setup = lambda phase: click.echo(f"[ufuzz] set-up {time.monotonic() - t0:6.1f}s  {phase}", err=True)


@contextmanager
def _run_errors(backend: str, out_dir: Path, db_prefix: str, db_hint: str | None) -> Iterator[None]:
    """A campaign that could not open (a new one or a resumed one): the message and exit code its cause gets —
    bad input (2) where the user can fix an option, else the environment (3). ``db_prefix`` and ``db_hint``
    name the corpus database in its messages (see :func:`_database_error`)."""
    from sqlalchemy.exc import SQLAlchemyError

    from ufuzz.backends.protocol import BackendError, BackendUnavailable
    from ufuzz.corpus.store import CorpusDatabaseError
    from ufuzz.engine.dirlock import DirectoryLocked
    from ufuzz.engine.ending import describe
    from ufuzz.engine.preflight import PreflightError
    from ufuzz.engine.startup import StartError

    try:
        yield
    except PreflightError as exc:
        if exc.config:  # it answered, in another shape than its config file says: the file is the user's to fix
            hint = " (compare the JSON path named with the response shown)" if "response has no" in str(exc) else ""
            raise BadInput(f"backend {backend!r} answers in another shape than its configuration describes: "
                           f"its preflight round trip failed: {exc}{hint}") from None
        _fail(f"backend {backend!r} is unreachable or broken: its preflight round trip failed: {exc}")
    except StartError as exc:
        _start_error(exc)
    except CorpusDatabaseError as exc:
        _database_error(exc, db_prefix, db_hint)
    except DirectoryLocked as exc:
        raise Unavailable(str(exc)) from None
    except SQLAlchemyError as exc:
        raise Unavailable(f"corpus database of {out_dir}: {describe(exc)}") from None
    except BackendUnavailable as exc:
        raise Unavailable(str(exc)) from None
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]) if exc.args else str(exc), param_hint="'--backend'") from None
    except BackendError as exc:
        raise Unavailable(f"backend {backend!r}: {exc}") from None
    except ValueError as exc:
        raise BadInput(f"backend {backend!r}: {exc}") from None
    except OSError as exc:
        raise Unavailable(f"cannot write the campaign in {out_dir}: {exc.strerror or exc}") from None


def _start_error(exc: Any) -> None:
    """Where a campaign would write cannot be used: a server that does not answer is the environment (3),
    the rest is the option's fault (2)."""
    if exc.environment:
        raise Unavailable(f"{exc.option}: {exc}") from None
    raise click.BadParameter(str(exc), param_hint=f"'{exc.option}'") from None


def _database_error(exc: Any, prefix: str, hint: str | None) -> None:
    """A corpus database that cannot be used: exit 3 when it is locked or does not answer, else bad input (2)
    naming the option or the directory."""
    if getattr(exc, "environment", False):
        raise Unavailable(f"{prefix}{exc}") from None
    if hint is not None:
        raise click.BadParameter(str(exc), param_hint=hint) from None
    raise BadInput(f"{prefix}{exc}") from None


def _refuse_busy(out_dir: Path) -> None:
    """A directory a live campaign writes is never replaced nor shared (exit 3)."""
    from ufuzz.engine.dirlock import DirectoryLocked, holder

    busy = holder(out_dir)
    if busy is not None:
        raise Unavailable(str(DirectoryLocked(out_dir, busy)))


def _lock(out_dir: Path) -> Any:
    from ufuzz.engine.dirlock import DirectoryLock, DirectoryLocked

    try:
        return DirectoryLock.acquire(out_dir)
    except DirectoryLocked as exc:
        raise Unavailable(str(exc)) from None
    except OSError as exc:
        raise Unavailable(f"cannot lock {out_dir}: {exc.strerror or exc}") from None


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    click.echo("nothing was recorded: the campaign did not start", err=True)
    sys.exit(EXIT_CODES["error"])


def _end(summary: dict[str, Any], out_dir: Path, *, fail_on: str = "never", verdict: Any = None) -> None:
    """Print the summary and exit with the code of the campaign's end reason (or 1 for failures that
    ``--fail-on`` counts, when the campaign ran without error or interruption)."""
    _print_summary(summary, out_dir)
    if verdict is not None:
        _print_baseline(verdict)
    reason = summary["status"]
    if summary.get("message"):
        click.echo(f"{'error' if reason == 'error' else 'note'}: {summary['message']}", err=True)
    for warning in summary.get("warnings") or ():
        click.echo(f"warning: {warning}", err=True)
    if reason in ("interrupted", "error", "exhausted", "time_limit", "llm_budget_spent"):
        click.echo(f"continue with: ufuzz run --resume {out_dir}", err=True)
    if reason not in ("interrupted", "error"):
        code = _exit_code(fail_on, summary, verdict)
        if code:
            sys.exit(code)
    if reason == "error" and summary.get("exit_code") == INTERNAL_ERROR:
        click.echo(f"this is a fault of ufuzz's own: please report it with {out_dir / 'campaign.log'} "
                   "(the traceback is there)", err=True)
        sys.exit(INTERNAL_ERROR)
    sys.exit(EXIT_CODES.get(reason, EXIT_CODES["error"]))


def _load_baseline(path: str | None) -> Any:
    """The baseline corpus, read before the campaign starts so that a bad file costs nothing."""
    if path is None:
        return None
    from ufuzz.triage.corpusfile import CorpusFileError, load_corpus

    try:
        return load_corpus(path)
    except CorpusFileError as exc:
        raise click.BadParameter(str(exc), param_hint="'--baseline'") from None


def _match_baseline(ctx: click.Context, corpus: Any, seed: int, budget: int, strategy: str, k: int,
                    batch: int | None) -> tuple:
    """``--match-baseline``: the baseline campaign's seed, budget, strategy, k and batch where not given."""
    from ufuzz.triage.baseline import baseline_source

    if corpus is None:
        raise click.UsageError("--match-baseline needs --baseline CORPUS")
    src = baseline_source(corpus)
    pick = {"rng_seed": seed, "budget": budget, "strategy": strategy, "k": k, "batch": batch}
    for name, field in (("rng_seed", "seed"), ("budget", "budget"), ("strategy", "strategy"), ("k", "k"),
                        ("batch", "batch")):
        given = ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
        if not given and src[field] is not None:
            pick[name] = src[field]
    return (int(pick["rng_seed"]), int(pick["budget"]), str(pick["strategy"]), int(pick["k"]),
            None if pick["batch"] is None else int(pick["batch"]))


def _baseline_mismatch(corpus: Any, cfg: Any, strategy: str) -> list[str]:
    """How this campaign differs from the baseline's, said before it starts (known bugs may look new)."""
    if corpus is None:
        return []
    from ufuzz.oracles.judging import Judging
    from ufuzz.triage.baseline import baseline_mismatch

    diffs = baseline_mismatch(corpus, seed=cfg.seed, budget=cfg.budget, strategy=strategy, k=cfg.k,
                              backend=cfg.backend, judging=Judging.of(cfg).to_dict(), batch=cfg.batch,
                              readback=cfg.readback)
    if diffs:
        click.echo(f"note: this campaign differs from the one baseline {corpus.path} was exported from: "
                   f"{'; '.join(diffs)}. Failures are matched by behaviour, so known bugs met on other facts stay "
                   "known; but this campaign may reach behaviours the baseline's never did (new ones fail the night once met more "
                   "often than the baseline's campaign could have missed by chance; rarer ones are listed as unconfirmed), "
                   "and other judging decides failures differently. --match-baseline runs the baseline's seed, "
                   "budget, strategy, k and batch", err=True)
    return diffs


def _write_junit(out_dir: Path, db: str | None, summary: dict[str, Any], verdict: Any, path: str, *,
                 baseline_given: bool = False) -> None:
    from ufuzz.reports.junit import write_campaign_junit

    try:
        write_campaign_junit(out_dir, db, summary, verdict, path, baseline_given=baseline_given)
    except OSError as exc:
        click.echo(f"error: cannot write --junit {path}: {exc.strerror or exc}", err=True)


def _mark_baseline(out_dir: Path, db: str | None, summary: dict[str, Any], corpus: Any,
                   mismatch: list[str] | None = None) -> Any:
    """Compare the campaign's failures with the baseline; the verdict goes into summary.json too."""
    from ufuzz.corpus.campaign import load_campaign
    from ufuzz.engine.ending import write_summary
    from ufuzz.triage.baseline import compare_with_baseline

    data = load_campaign(out_dir, db, campaign_id=summary["campaign"])
    verdict = compare_with_baseline(data.failures, corpus, {c: m.ops for c, m in data.mutants.items()},
                                    executions=summary.get("executions"), exact=not mismatch)
    verdict.mismatch = list(mismatch or [])
    summary["baseline"] = verdict.to_dict()
    from ufuzz.engine.dirlock import DirectoryLock, DirectoryLocked

    try:  # the campaign has let go of its directory: the verdict is written only while no one else has it
        with DirectoryLock.acquire(out_dir):
            write_summary(out_dir / "summary.json", {k: v for k, v in summary.items() if k != "warnings"})
    except DirectoryLocked as exc:
        summary.setdefault("warnings", []).append(f"the baseline verdict is not in summary.json: {exc}")
    return verdict


def _print_baseline(v: Any) -> None:
    """The night's verdict by behaviour: counts, then every behaviour that is not plainly known (never capped:
    there are at most two per behaviour class) with its operators, level:kind, size and an example key."""
    from ufuzz.triage.baseline import STATUSES

    n = v.behaviour_counts()
    keys = ", ".join(f"{len(getattr(v, st))} {st}" for st in STATUSES if getattr(v, st))
    how = ("this is the baseline's own campaign: a behaviour it lacks is new at once where no correct system "
           "shows it (a memory the state no longer holds, a state change), else once met more often than chance "
           "allows" if v.exact else
           "another campaign than the baseline's: a behaviour it lacks is new once met more often than chance "
           "allows")
    click.echo(f"against baseline {v.corpus} (matched by behaviour; {how}): behaviours "
               + ", ".join(f"{n[st]} {st}" for st in STATUSES) + f" — unique failures {keys or 'none'}"
               + (f"; {n['unseen']} behaviours of the baseline not met by this campaign (`ufuzz corpus check` "
                  "replays their records)" if n["unseen"] else ""))
    if v.mismatch:
        click.echo(f"  note: this campaign is not the baseline's ({'; '.join(v.mismatch)})")
    for status in STATUSES[:-1]:
        for b in v.behaviours_by(status):
            click.echo(f"  {status.upper():11s} {b['id']}: {b['title']}")
            click.echo(f"              {b['unique']} unique failures, {b['causes']} causes "
                       f"({b['baseline_causes']} in the baseline){_chance_words(b, v.exact)}; {', '.join(b['operators'])} "
                       f"{', '.join(b['kinds'])}; e.g. {b['example']}")
    if v.failed:
        click.echo("  (each failure's mark: `ufuzz failures list DIR`; every key in summary.json 'baseline')")


def _chance_words(b: dict[str, Any], exact: bool) -> str:
    """How likely chance alone made the difference (not said where chance plays no part)."""
    if b["status"] not in ("worse", "unconfirmed", "new") or b.get("chance") is None or (exact and b.get("sure")
                                                                                        and b["status"] == "new"):
        return ""
    if b["status"] == "unconfirmed":
        return (f"; the baseline's campaign may have missed it by chance ({b['chance']:.0%}): it does not fail "
                "the night")
    return f"; by chance: {b['chance']:.2%}"


def _exit_code(fail_on: str, summary: dict[str, Any], verdict: Any) -> int:
    if fail_on == "never":
        return 0
    if fail_on == "any":
        return 1 if summary["unique_failures"] else 0
    if verdict is None:  # --fail-on new without a baseline: every failure is new
        return 1 if summary["unique_failures"] else 0
    return 1 if verdict.failed else 0


def _set_aside(out_dir: Path) -> Path:
    """``--force``: move the old campaign directory aside (removed once the new campaign has started, put
    back if it fails to start)."""
    aside = out_dir.with_name(f".{out_dir.name}.replaced-{os.getpid()}")
    try:
        out_dir.rename(aside)
    except OSError:  # e.g. a mount point: it cannot move, so it is emptied now
        shutil.rmtree(out_dir)
        return aside
    return aside


def _drop(aside: Path | None) -> None:
    if aside is not None and aside.exists():
        shutil.rmtree(aside, ignore_errors=True)


def _print_summary(s: dict[str, Any], out_dir: Path) -> None:
    click.echo(f"campaign {s['campaign']} {s['status'].replace('_', ' ')}: {s['executions']} executions "
               f"(budget {s['budget']}), {s['mutants_valid']} valid mutants, {s['mutants_rejected']} rejected, "
               f"{s['retained']} retained")
    hidden = isinstance(s.get("judging"), dict) and not s["judging"].get("selection")
    cov = "not observed (retrieval hidden)" if hidden else f"{s['coverage']}/{s['coverage_total']} memories"
    click.echo(f"coverage {cov}; obligations {s['obligations_covered']}/{s['obligations']}; errors {s['errors']}")
    if s.get("worker"):
        w = s["worker"]
        click.echo(f"backend worker: {w['starts']} start(s), {w['recycles']} recycled, {w['crashes']} crashed, "
                   f"{w['rebuilds']} states rebuilt, peak {w['peak_rss_mb']:.0f} MB")
    if s.get("llm"):
        from ufuzz.reports.status import llm_line

        click.echo(llm_line(s["llm"]).replace("llm        ", "llm: ", 1))
    click.echo(f"unique failures: {s['unique_failures']}")
    for op, n in sorted(s["failures_by_operator"].items()):
        click.echo(f"  {op:16s} {n}")
    click.echo(f"results in {out_dir}")


def _set_abstention(cfg: object, phrases: tuple[str, ...], no_defaults: bool) -> None:
    """The LLM answerer's abstention phrases (``--abstain-phrase``), checked: a phrase needs words."""
    from ufuzz.oracles.matching import Abstention

    try:
        Abstention(tuple(phrases), not no_defaults)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--abstain-phrase'") from None
    if no_defaults and not phrases:
        raise click.BadParameter("--no-default-abstain-phrases leaves no phrase: give --abstain-phrase TEXT",
                                 param_hint="'--no-default-abstain-phrases'")
    cfg.abstain_phrases, cfg.abstain_defaults = tuple(phrases), not no_defaults
