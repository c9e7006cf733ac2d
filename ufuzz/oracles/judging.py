"""How a campaign's executions are responded to and judged, rebuilt the same way wherever a verdict is made.

A campaign, ``ufuzz replay`` of it and ``ufuzz corpus check`` of its exported corpus must decide failures
alike: the same responder (the backend's own answer, the configured LLM answerer or the opt-in top-evidence
reader), the same judge and the same levels (selection where retrieval is visible, with the backend's own
relevance threshold). :class:`Judging` is that part of a campaign's configuration; it travels in the
campaign's stored config and in a regression corpus's header, and :meth:`Judging.build` turns it into the
responder and :class:`~ufuzz.oracles.verdict.Context` for a given backend.

``retrieval`` says whether the fuzzer looks at the backend's retrieval: ``auto`` as the backend exposes it,
``hidden`` never (``--retrieval-visibility hidden``: the backend still retrieves for its answer or the
configured answerer, but only the response is observed and judged — the setting of a product that only
answers), ``visible`` requires it. A hidden campaign needs a response to judge: a backend that answers or an
LLM answerer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ufuzz.backends.protocol import MemoryBackend
from ufuzz.backends.responders import LLMAnswerer, Responder, TopEvidenceReader
from ufuzz.oracles.matching import Abstention
from ufuzz.oracles.verdict import Context

READERS = ("none", "top-evidence")
RETRIEVAL = ("auto", "visible", "hidden")


@dataclass(frozen=True)
class Judging:
    reader: str = "none"  # "top-evidence": the made-up reader, opt-in, labelled as its own
    reader_threshold: float | None = None  # the reader's cut-off; None = the backend's hint
    answer: bool = False  # --llm-uses answer: an LLM answerer responds
    judge: bool = False  # --llm-uses judge: an LLM judges responses
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key_env: str = "OPENAI_API_KEY"
    llm_cache: str | None = None
    llm_timeout: float = 30.0
    llm_retries: int = 2
    retrieval: str = "auto"  # auto | visible | hidden (--retrieval-visibility)
    prompts: dict[str, dict[str, str]] | None = None  # --prompts DIR: the answerer's/judge's own prompts
    #: the LLM answerer's abstention phrases (--abstain-phrase) and whether the built-in ones count too
    #: (--no-default-abstain-phrases); a backend that answers declares its own (Capabilities.abstain_phrases)
    abstain_phrases: tuple[str, ...] = ()
    abstain_defaults: bool = True

    def __post_init__(self) -> None:
        if self.reader not in READERS:
            raise ValueError(f"--reader must be one of {', '.join(READERS)}, not {self.reader!r}")
        if self.retrieval not in RETRIEVAL:
            raise ValueError(f"--retrieval-visibility must be one of {', '.join(RETRIEVAL)}, "
                             f"not {self.retrieval!r}")
        if self.retrieval == "hidden" and self.reader != "none":
            raise ValueError("--retrieval-visibility hidden with --reader: the reader's verdicts are never the "
                             "memory system's, so nothing would be judged; use a backend that answers or "
                             "--llm-uses answer")
        if self.reader != "none" and self.answer:
            raise ValueError("--reader and --llm-uses answer both make responses: choose one")
        object.__setattr__(self, "abstain_phrases", tuple(self.abstain_phrases))
        Abstention(self.abstain_phrases)  # a phrase without words is refused here, naming it
        if (self.answer or self.judge) and not self.llm_base_url:
            raise ValueError("--llm-uses answer/judge needs --llm-base-url (an OpenAI-compatible endpoint)")

    @classmethod
    def of(cls, config: Any) -> Judging:
        """From a campaign's config (a CampaignConfig or its stored dict); absent keys take defaults."""
        d = config if isinstance(config, dict) else asdict(config)
        uses = tuple(d.get("llm_uses") or ())
        return cls(reader=str(d.get("reader") or "none"), reader_threshold=d.get("reader_threshold"),
                   answer="answer" in uses, judge="judge" in uses, llm_base_url=d.get("llm_base_url"),
                   llm_model=d.get("llm_model"), llm_api_key_env=str(d.get("llm_api_key_env") or "OPENAI_API_KEY"),
                   llm_cache=d.get("llm_cache"), llm_timeout=float(d.get("llm_timeout") or 30.0),
                   llm_retries=int(d.get("llm_retries") if d.get("llm_retries") is not None else 2),
                   retrieval=str(d.get("retrieval") or "auto"), prompts=d.get("prompts"),
                   abstain_phrases=tuple(d.get("abstain_phrases") or ()),
                   abstain_defaults=bool(d.get("abstain_defaults", True)))

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Judging:
        """From :meth:`to_dict` output (a corpus header); unknown keys are an error naming them."""
        d = dict(d or {})
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown judging key(s) {unknown}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not d["abstain_phrases"] and d["abstain_defaults"]:  # the default: headers written before it read alike
            del d["abstain_phrases"], d["abstain_defaults"]
        else:
            d["abstain_phrases"] = list(d["abstain_phrases"])
        return d

    def llm(self) -> Any:
        """The LLM client of the answerer/judge, or None when neither is used."""
        if not (self.answer or self.judge):
            return None
        from ufuzz.llm import CallCache, LLMClient, LLMConfig

        return LLMClient(LLMConfig(base_url=str(self.llm_base_url), model=self.llm_model or "default",
                                   api_key_env=self.llm_api_key_env, timeout=self.llm_timeout,
                                   max_retries=self.llm_retries), CallCache(self.llm_cache))

    def visible(self, backend: MemoryBackend) -> bool:
        """Whether the campaign sees ``backend``'s retrieval (and judges the selection level)."""
        return backend.capabilities.visible_retrieval and self.retrieval != "hidden"

    def check(self, backend: MemoryBackend) -> None:
        """Raise ``ValueError`` (naming the option) when these settings cannot judge anything on ``backend``."""
        caps = backend.capabilities
        if self.retrieval == "visible" and not caps.visible_retrieval:
            raise ValueError(f"--retrieval-visibility visible: backend {backend.name!r} exposes no retrieval "
                             "(it only answers); use auto or hidden")
        if not self.visible(backend) and not (caps.answers or self.answer):
            raise ValueError(f"retrieval is hidden on backend {backend.name!r} and nothing responds: a hidden "
                             "campaign judges responses only, so it needs a backend that answers or "
                             "--llm-uses answer")

    def build(self, backend: MemoryBackend, llm: Any = None) -> tuple[Responder | None, Context]:
        """The responder and the verdict context for ``backend`` (``llm``: a client to reuse)."""
        self.check(backend)
        caps = backend.capabilities
        responder: Responder | None = None
        judge = None
        if self.answer or self.judge:
            from ufuzz.llm.prompts import system_of
            from ufuzz.llm.uses import Answerer, Judge

            llm = llm or self.llm()
            if self.answer:
                responder = LLMAnswerer(Answerer(llm, system_of("answer", self.prompts)), self.llm_model or "default",
                                        Abstention(self.abstain_phrases, self.abstain_defaults))
            if self.judge:
                # takes the reference's rubric too (MemOps strings, LongMemEval/LoCoMo criteria)
                judge = Judge(llm, system_of("judge", self.prompts)).label
        if self.reader == "top-evidence":
            thr = self.reader_threshold if self.reader_threshold is not None else caps.reader_threshold
            responder = TopEvidenceReader(thr)
        abstention = (Abstention(tuple(caps.abstain_phrases), caps.abstain_defaults) if caps.answers else
                      getattr(responder, "abstention", None))
        return responder, Context(visible=self.visible(backend), threshold=caps.relevance_threshold, judge=judge,
                                  abstention=abstention)

    def describe(self, backend: MemoryBackend, responder: Responder | None) -> dict[str, Any]:
        """What ``ufuzz status`` says about how failures were decided."""
        caps = backend.capabilities
        who = "backend" if caps.answers else (responder.name if responder is not None else None)
        retrieval = ("visible" if self.visible(backend) else
                     "hidden by the campaign" if caps.visible_retrieval else "hidden by the backend")
        return {"selection": self.visible(backend), "retrieval": retrieval,
                "relevance_threshold": caps.relevance_threshold,
                "responder": who, "judge": "llm" if self.judge else ("text" if who else None)}
