"""The backend protocol every memory-system adapter implements.

A backend holds any number of *states*, each named by an opaque ``StateHandle`` string. ``build`` ingests a
checkpoint into a fresh state; ``fork`` gives an independent copy of a state (writes to either never reach
the other); ``release`` frees one. All ids crossing this interface are the checkpoint's memory ids (or the
ids ufuzz passed to ``add``/``update``): an adapter keeps its own mapping to native ids.

Backends that cannot copy a state (``capabilities.copyable`` False) still implement ``fork`` by the
executor's fallback: ``ufuzz.engine.executor`` rebuilds the checkpoint in a new namespace and replays the
state's operations, so adapters may simply raise ``NotImplementedError`` from ``fork``.

Errors from the memory system are raised as :class:`BackendError`; the campaign turns them into error
records, never failures.

Options (``--opt NAME=VALUE``) are declared on the adapter class (``options_spec``, ``option_rules``: see
:mod:`ufuzz.backends.options`) and checked here, once, when the adapter is constructed: an adapter reads
its typed settings from ``self.settings``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ufuzz.backends import options as _options
from ufuzz.backends.options import Option, Requires
from ufuzz.model import Checkpoint, Memory

StateHandle = str


class BackendError(RuntimeError):
    """A fault of the memory system under test (or its adapter), not a finding."""


class BackendUnreachable(BackendError):
    """The system under test cannot be reached at all (connection refused, timed out, name not resolved):
    nothing about its memory use was observed. ``ufuzz corpus check`` exits 3 on it, so that a nightly job
    tells "the product is down" apart from "a known failure changed"."""


class BackendMismatch(BackendError):
    """The system answered, but not in the shape its configuration describes (a JSON path of a product TOML
    that selects nothing in a successful response): before a campaign starts this is the configuration to fix
    (bad input), during one a fault of that call like any other."""


class BackendUnavailable(BackendError):
    """The backend's library is not installed or cannot start; ``hint`` says how to fix it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message + (f" ({hint})" if hint else ""))
        self.hint = hint


@dataclass(frozen=True)
class Capabilities:
    visible_retrieval: bool = True  # retrieve() returns ordered ids/scores; False = only answer() is seen
    copyable: bool = True  # fork() is native (snapshot/copy-on-write)
    native_update: bool = True
    native_delete: bool = True
    observable_state: bool = True  # get()/list() reflect stored state independently of retrieval
    answers: bool = False  # answer() is the system's own answerer
    deterministic: bool = True
    # the system's own relevance threshold: what it scores below this it does not consider relevant (mem0's
    # search threshold, a product's declared cut-off, the embedded relevance_threshold option). Only where a
    # backend declares one does the selection level judge abstention (a decoy scored at or above it).
    relevance_threshold: float | None = None
    # score below which the opt-in top-evidence reader (--reader top-evidence) abstains: a hint about this
    # backend's score scale, not a property of the system under test
    reader_threshold: float | None = None
    cheap_fork: bool = False  # fork costs next to nothing (copy-on-write): query mutants get their own fork too
    # what the system's own answer says when it abstains (a product's "No matching note."), beside the built-in
    # phrases unless abstain_defaults is False (ufuzz.oracles.matching.Abstention)
    abstain_phrases: tuple[str, ...] = ()
    abstain_defaults: bool = True
    # retrieve() returns the stored memories themselves (their ids or their stored texts), not facts derived from
    # them (a graph's edges): a memory's own text must find it — the read-your-writes probe
    # (ufuzz.engine.readback) searches for each write; False (the default) leaves writes unprobed
    verbatim_search: bool = False
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Retrieved:
    id: str
    text: str
    score: float
    #: the memory system's own id of this memory where it differs from ufuzz's (a REST product that assigns
    #: its ids); shown by ``ufuzz failures show`` so a bug report speaks the product's language
    native_id: str | None = None


@dataclass(frozen=True)
class Answer:
    """A backend's own response with the memories it says it used.

    ``cited`` are ufuzz memory ids (an adapter maps the product's ids). They are recorded with the execution
    and with a failure, to help localise it; verdicts judge the response text only, since a citation is the
    product's claim about its retrieval, not an observation of it.
    """

    text: str
    cited: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoredMemory:
    """A memory as the backend reports it through get/list (independent of retrieval)."""

    id: str
    text: str
    timestamp: str
    active: bool = True  # False for a tombstoned or explicitly superseded entry still stored
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OpResult:
    """Result of a native memory operation as reported by the backend.

    ``written`` are ids that now hold the operation's new content; ``superseded`` ids remain stored
    but were marked old by the backend; ``removed`` ids were deleted or overwritten in place.
    """

    op: str  # add | update | delete
    ok: bool
    target: str | None = None
    written: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    detail: str = ""


class MemoryBackend(ABC):
    """Abstract base of all adapters. Constructed with a working directory and an options mapping.

    ``options`` keeps the options as given (recorded with a campaign, forwarded to a worker process);
    ``settings`` holds every declared option, typed, with its default where it was not given.
    """

    name: str = "abstract"
    #: pip extra that installs the backend's dependencies, shown by ``ufuzz backends``
    extra: str | None = None
    #: True for adapters over native libraries (databases, model runtimes) whose memory or crashes must not
    #: take the fuzzer down: campaigns run them in a recyclable worker process (``ufuzz.backends.worker``)
    #: unless ``--isolation none`` is given.
    isolate: bool = False
    #: True for adapters that may be called from several threads at once and gain from it, their calls waiting
    #: on the network (the HTTP adapter): ``--max-concurrency`` thread lanes then overlap their calls; any other
    #: adapter is called by one thread at a time (``ufuzz.engine.parallel.threadlanes.SerialBackend``)
    concurrent_calls: bool = False
    #: True for adapters whose build checks the state's listing against what the system said it stored (the HTTP
    #: adapter): a product that pages its listing, configured without ``[list] next`` or ``cursor``, fails that
    #: check only on a state larger than its page, so the preflight builds the campaign's largest checkpoint too
    build_checks_listing: bool = False
    #: the options the adapter accepts; None only for wrappers that forward their options to another
    #: backend which checks them (the worker process)
    options_spec: ClassVar[tuple[Option, ...] | None] = ()
    #: cross-option rules, e.g. ``Requires("write_mode", ("llm_base_url", "llm_model"), "episode")``
    option_rules: ClassVar[tuple[Requires, ...]] = ()

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None) -> None:
        self.workdir = Path(workdir)
        self.options = dict(options or {})
        self.settings = self.check_options(self.options)

    # -- options ---------------------------------------------------------------------------------------
    @classmethod
    def check_options(cls, options: dict[str, Any] | None) -> dict[str, Any]:
        """Typed settings for ``options`` (defaults filled in); a ValueError naming the backend and the option
        for an unknown option, a bad value or a broken rule."""
        if cls.options_spec is None:
            return dict(options or {})
        return _options.check(cls.name, cls.options_spec, cls.option_rules, options or {})

    @classmethod
    def absolute_options(cls, options: dict[str, Any] | None) -> dict[str, Any]:
        """``options`` with the files they name made absolute (:func:`ufuzz.backends.options.absolute`)."""
        return _options.absolute(cls.options_spec or (), options or {})

    @classmethod
    def public_options(cls, options: dict[str, Any] | None) -> dict[str, Any]:
        """``options`` with secret values masked: what may be logged or recorded."""
        return _options.public(cls.options_spec or (), options or {})

    @classmethod
    def caveats(cls, options: dict[str, Any] | None) -> list[str]:
        """What these options leave ufuzz unable to see (said by ``backends check`` and at a campaign's start,
        never an error): e.g. a product whose search results carry no texts. None by default."""
        return []

    # -- description -----------------------------------------------------------------------------------
    @property
    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    @classmethod
    def dependencies_installed(cls) -> tuple[bool, str]:
        """(installed?, install hint). Adapters with optional dependencies override this."""
        return True, ""

    def describe(self) -> dict[str, Any]:
        """Configuration facts recorded with every campaign (retrieval mode, policies, versions)."""
        return {"backend": self.name, **self.public_options(self.options)}

    # -- states ----------------------------------------------------------------------------------------
    @abstractmethod
    def build(self, checkpoint: Checkpoint) -> StateHandle:
        """Ingest ``checkpoint`` into a new state and return its handle."""

    def fork(self, state: StateHandle) -> StateHandle:
        """An independent copy of ``state``. Backends that cannot copy raise NotImplementedError."""
        raise NotImplementedError

    @abstractmethod
    def release(self, state: StateHandle) -> None:
        """Free a state. Releasing a state must not affect any other state."""

    # -- memory use ------------------------------------------------------------------------------------
    @abstractmethod
    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        """Ordered top-k (best first). Ties must be broken deterministically."""

    def answer(self, state: StateHandle, query: str, retrieved: list[Retrieved]) -> str | Answer | None:
        """The system's own response (text, or an :class:`Answer` with cited memory ids), or None when it has no
        answerer (then a configured responder answers, if any). ``retrieved`` is what :meth:`retrieve` returned
        (empty for a backend whose retrieval is hidden); a product that answers on its own may ignore it."""
        return None

    # -- native memory operations ------------------------------------------------------------------------
    @abstractmethod
    def add(self, state: StateHandle, memory: Memory) -> OpResult: ...

    @abstractmethod
    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        """Record ``new`` (text/timestamp; ``new.id`` is the id to use if the backend appends) as the later,
        active version of ``memory_id`` through the backend's own update mechanism."""

    @abstractmethod
    def delete(self, state: StateHandle, memory_id: str) -> OpResult: ...

    # -- observation (independent of retrieval) ------------------------------------------------------------
    @abstractmethod
    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None: ...

    @abstractmethod
    def list(self, state: StateHandle) -> list[StoredMemory]: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release every resource (files, connections)."""
