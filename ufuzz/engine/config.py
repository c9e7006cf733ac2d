"""A campaign's configuration (:class:`CampaignConfig`): everything ``ufuzz run`` can set, checked when it is
made (a bad value raises ValueError naming its option), recorded with the campaign (secrets masked) and read
back by ``--resume``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ufuzz.backends import registry
from ufuzz.backends.options import absolute_path
from ufuzz.engine.parallel.batching import MAX_BATCH, default_batch, legacy_batch
from ufuzz.oracles.judging import READERS, Judging

__all__ = ["DEFAULT_SEEDS", "LLM_USES", "SEARCHES", "CampaignConfig", "resolve_seeds"]

LLM_USES = ("paraphrase", "answer", "judge")
SEARCHES = ("auto", "walk", "spread")
DEFAULT_SEEDS = Path(__file__).resolve().parents[2] / "seeds" / "default.jsonl"


def resolve_seeds(path: str | None) -> Path:
    """The seed file a campaign reads: the one given, else the shipped default suite."""
    return Path(path) if path else DEFAULT_SEEDS


@dataclass
class CampaignConfig:
    backend: str = "embedded"
    backend_options: dict[str, Any] = field(default_factory=dict)
    seeds: str | None = None  # path to a JSONL suite; None = the shipped default suite
    budget: int = 2000
    seed: int = 0
    k: int = 5
    out: str = "campaigns/run"
    db: str | None = None  # SQLAlchemy URL; None = sqlite file in the campaign directory
    p: float = 0.9  # RBO persistence
    max_depth: int = 3
    attempts: int = 3
    strategy: str = "full"
    operators: tuple[str, ...] | None = None
    ablation: dict[str, bool] = field(default_factory=dict)
    retain: bool = True
    obligation_first: bool = True
    explore_share: float = 0.0  # chance of a retained-mutant pick while obligations remain (see scheduler)
    # phase 1: "walk" the seeds one by one, "spread" over them by greedy cover and operator yield (the search for
    # suites larger than the budget: ufuzz.engine.scheduler), "auto": spread when the seeds' obligations are more
    # than the budget has executions
    search: str = "auto"
    # Query mutants write nothing. None (auto): they get their own fork where forking is cheap (copy-on-write,
    # the embedded backend) and run on the parent's state otherwise (mem0, Graphiti: a fork is a file copy,
    # and Kuzu does not survive thousands of database opens in one process). True/False force it.
    fork_queries: bool | None = None
    max_live_states: int = 32  # mutated states kept open at once; older ones are rebuilt on demand
    # every verified add or update read back beside a twin on a copy (ufuzz.engine.readback) where the backend's
    # search returns its stored memories and states can be copied; --no-readback turns it off
    readback: bool = True
    # "auto": adapters over native libraries (mem0, Graphiti, A-Mem) run in a worker process that is recycled
    # when it grows past worker_max_rss_mb (or every worker_recycle backend calls) and restarted after a crash;
    # "process" forces a worker, "none" runs the backend in the fuzzer's own process.
    isolation: str = "auto"
    worker_recycle: int = 0  # backend calls per worker; 0 = no call limit
    worker_max_rss_mb: float | None = None  # recycle the worker past this resident size; None = a third of RAM
    worker_timeout: float = 600  # seconds one backend call may take before the worker is killed
    llm_base_url: str | None = None  # OpenAI-compatible endpoint; None = no LLM anywhere
    llm_model: str | None = None
    llm_api_key_env: str = "OPENAI_API_KEY"
    llm_uses: tuple[str, ...] = ()  # subset of LLM_USES
    # "none": responses come only from the system under test (a backend that answers, or --llm-uses answer);
    # "top-evidence": the made-up reader that echoes the top memory, opt-in, its failures labelled as its own
    reader: str = "none"
    reader_threshold: float | None = None  # the top-evidence reader's cut-off; None = the backend's hint
    llm_timeout: float = 30.0  # seconds per LLM request
    llm_retries: int = 2  # retries of a failed LLM request, with exponential backoff
    # what the LLM answerer says when it abstains (--abstain-phrase), and whether the built-in phrases count too
    abstain_phrases: tuple[str, ...] = ()
    abstain_defaults: bool = True
    llm_cache: str | None = None  # call-cache file; None = $UFUZZ_CACHE_DIR/llm_calls.sqlite or ~/.cache/ufuzz
    #: the user's own prompts ({use: {"version", "system"}}, from --prompts DIR); None = the defaults
    prompts: dict[str, dict[str, str]] | None = None
    max_time: float | None = None  # wall seconds of this run; then it ends with reason time_limit
    # "auto": retrieval as the backend exposes it; "hidden": only responses are observed, judged and fed back
    # (a product that only answers; --retrieval-visibility hidden); "visible": require visible retrieval
    retrieval: str = "auto"
    # this many backend errors in a row (no successful execution between them) end the campaign as an error;
    # 0 = never
    max_consecutive_errors: int = 20
    preflight: bool = True  # a round trip through the backend (and LLM endpoint) before anything is spent
    # Write windows and resume snapshots: how much a kill may cost and how often the engine state is saved.
    # They change nothing in a campaign's results.
    window_records: int = 256
    window_seconds: float = 1.0
    snapshot_seconds: float = 0.0  # at least this long between snapshots (0: every window unless slow)
    # Parallel runs (ufuzz.engine.parallel): N > 1 runs each batch's tasks in N lanes, each with a backend of its own,
    # and applies the results in task order — with the same batch, the campaign of one lane. ray_address runs the
    # lanes as Ray actors ("local": a cluster this process starts; "auto", "host:port", "ray://host:port").
    workers: int = 1
    ray_address: str | None = None
    # Calls in flight from one process (--max-concurrency N; Inspect's max_connections, promptfoo's
    # --max-concurrency): N thread lanes (ufuzz.engine.parallel.threadlanes) share the campaign's backend and LLM client,
    # so up to N LLM requests (answer, judge, paraphrase) and N backend calls wait at once, applied in task order:
    # with the same batch, the campaign of N = 1.
    max_concurrency: int = 1
    # Tasks the scheduler draws before it sees their results (--batch): part of the schedule, like the seed, so
    # that --workers and --max-concurrency change how fast a campaign runs and never what it finds; up to two
    # batches are in flight (one being applied while the next runs), so concurrency beyond 2 x batch waits
    batch: int | None = None  # None: default_batch of the lanes (1 with one lane, else 128), set when validated
    # Being a good API citizen (ufuzz.llm.ratelimit): requests and tokens per minute (None: no limit), the wait
    # a call may spend on 429/503 answers, prices for the cost estimate (USD per million prompt, completion
    # tokens) and a token budget that ends the campaign (reason llm_budget_spent)
    llm_rpm: float | None = None
    llm_tpm: float | None = None
    llm_rate_limit_wait: float = 600.0
    llm_price: tuple[float, float] | None = None
    max_llm_tokens: int | None = None

    def __post_init__(self) -> None:
        bad = [u for u in self.llm_uses if u not in LLM_USES]
        if bad:
            raise ValueError(f"--llm-uses: unknown use(s) {bad}; allowed: {', '.join(LLM_USES)}")
        if self.llm_uses and not self.llm_base_url:
            raise ValueError("--llm-uses needs --llm-base-url (an OpenAI-compatible endpoint)")
        if self.reader not in READERS:
            raise ValueError(f"--reader must be one of {', '.join(READERS)}, not {self.reader!r}")
        Judging.of(self)  # the responder and judge settings must fit together
        if not 0.0 <= self.explore_share < 1.0:
            raise ValueError(f"--explore-share must be in [0, 1), not {self.explore_share}")
        if self.search not in SEARCHES:
            raise ValueError(f"--search must be one of {', '.join(SEARCHES)}, not {self.search!r}")
        if self.isolation not in registry.ISOLATION:
            raise ValueError(f"--isolation must be one of {', '.join(registry.ISOLATION)}, not {self.isolation!r}")
        if self.worker_recycle < 0 or (self.worker_max_rss_mb or 0) < 0 or self.worker_timeout <= 0:
            raise ValueError("--worker-recycle and --worker-max-rss-mb must be >= 0, --worker-timeout > 0")
        if self.max_time is not None and not self.max_time > 0:
            raise ValueError(f"--max-time must be positive, not {self.max_time}")
        if self.max_consecutive_errors < 0:
            raise ValueError(f"--max-consecutive-errors must be >= 0, not {self.max_consecutive_errors}")
        if not 0 < self.llm_timeout <= 3600 or not 0 <= self.llm_retries <= 10:
            raise ValueError("--llm-timeout must be in (0, 3600] seconds and --llm-retries in [0, 10]")
        if self.window_records < 1 or self.window_seconds < 0 or self.snapshot_seconds < 0:
            raise ValueError("window_records must be >= 1, window_seconds and snapshot_seconds >= 0")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"--workers must be a whole number of at least 1, not {self.workers!r}")
        self._check_llm_limits()
        self.absolute_paths()
        if self.ray_address is not None:
            from ufuzz.engine.parallel.raylanes import check_address

            check_address(self.ray_address, self.db)

    def absolute_paths(self) -> None:
        """The files the backend options name, made absolute here (a relative ``--config`` is the user's working
        directory's, not a lane's), and the campaign's own LLM call cache. An unknown backend is left for the
        campaign to report."""
        self.llm_cache = absolute_path(self.llm_cache)
        try:
            cls = registry.load(self.backend)
        except Exception:  # noqa: BLE001 - reported where the backend is made, with its own message
            return
        self.backend_options = cls.absolute_options(self.backend_options)

    def _check_llm_limits(self) -> None:
        c = self.max_concurrency
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= 1024:
            raise ValueError(f"--max-concurrency must be a whole number in [1, 1024], not {c!r}")
        if c > 1 and self.ray_address is not None:
            raise ValueError("--max-concurrency N does not combine with --ray-address yet (Ray lanes are one "
                             "call at a time; use --workers N --max-concurrency M on one machine)")
        for name in ("llm_rpm", "llm_tpm"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < 1e12):
                raise ValueError(f"--{name.replace('_', '-')} must be a positive number, not {v!r}")
        if not 0 <= self.llm_rate_limit_wait <= 86400:
            raise ValueError(f"--llm-rate-limit-wait must be in [0, 86400] seconds, not {self.llm_rate_limit_wait}")
        if self.llm_price is not None:
            price = tuple(self.llm_price)
            if len(price) != 2 or any(isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p < 1e9
                                      for p in price):
                raise ValueError(f"--llm-price must be two non-negative numbers IN,OUT (USD per million prompt "
                                 f"and completion tokens), not {self.llm_price!r}")
            self.llm_price = (float(price[0]), float(price[1]))
        if self.batch is None:
            self.batch = default_batch(self.workers, self.max_concurrency, self.ray_address)
        b = self.batch
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BATCH:
            raise ValueError(f"--batch must be a whole number in [1, {MAX_BATCH}], not {b!r}")
        t = self.max_llm_tokens
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise ValueError(f"--max-llm-tokens must be a whole number of at least 1, not {t!r}")
        if t is not None and not self.llm_uses:
            raise ValueError("--max-llm-tokens needs --llm-uses (no LLM is called without one)")

    def to_dict(self) -> dict[str, Any]:
        """The config as recorded with the campaign: a backend's secret options masked (its declared
        ``secret`` ones, and any option named like a key), so no secret reaches the store or a corpus."""
        d = asdict(self)
        try:
            opts = registry.load(self.backend).public_options(self.backend_options)
        except Exception:  # noqa: BLE001 - an unknown backend fails elsewhere, with its own message
            opts = dict(self.backend_options)
        d["backend_options"] = {k: v for k, v in opts.items() if "key" not in k.lower()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CampaignConfig:
        """A config as :meth:`to_dict` stored it (keys this version does not know are ignored)."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        if "batch" not in kw:  # recorded before --batch: its lanes made its batches (one task with one lane)
            kw["batch"] = legacy_batch(kw)
        for name in ("llm_uses", "operators", "llm_price"):
            if kw.get(name) is not None:
                kw[name] = tuple(kw[name])
        return cls(**kw)

