"""A step's mutant in the making: mutate the parent for the task's target and validate the result.

This is the part of a step that needs no corpus, oracle verdict or scheduler — only the operator, the parent, its
reference and (for a state operator) a fork of the parent's state — so it runs wherever that state is: in the
campaign's own process, or in a lane (:mod:`ufuzz.engine.parallel.core`) that owns a backend instance of its own. The
random generator is ``random.Random(f"{seed}:{counter}")`` wherever it runs, so a mutant does not depend on
where it was made.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ufuzz.backends.protocol import BackendError
from ufuzz.engine.readback import readback, written_times
from ufuzz.model import FuzzCase, Reference
from ufuzz.operators import sideeffects
from ufuzz.operators.base import Mutation, Operator, Rejected, StateView, Verdict

__all__ = ["Proposal", "propose"]


@dataclass
class Proposal:
    """A step's mutant in the making: the fork it writes to and, once valid, the mutant and its mutation."""

    handle: str | None = None  # the mutant's own fork (state operators; query mutants where forks are cheap)
    mutant: FuzzCase | None = None  # the mutant, or a stand-in recorded as rejected
    mutation: Mutation | None = None  # set only when the mutation was produced and validated
    valid: bool = False
    reason: str = ""  # why it was rejected
    error: tuple[str, str] | None = None  # (operation, message) of a backend fault: no mutant at all
    state_error: str | None = None  # a valid mutant whose state could not be had: not executed
    adopted: bool = False  # the fork became a retained mutant's live state: not released
    final: bool = False  # rejected, and no other try can go otherwise (the operator's move is deterministic)
    unjudged: bool = False  # valid, but none of its checks can fail here: not executed
    #: a side effect the state operation's verification saw (an ``operators.sideeffects.Finding``): rejected as
    #: a test, recorded as a failure of the state level
    finding: Any = None
    #: what reading a valid state mutant's write back said (a :class:`ufuzz.engine.readback.Readback`; None: not
    #: read back): its finding is a failure of the state level recorded beside the mutant, which stays a test
    readback: Any = None


def propose(op: Operator, parent: FuzzCase, reference: Reference | None, target: str, obligation: Any,
            counter: int, seed: int, *, executor: Any = None, fork: bool = False) -> Proposal:
    """Mutate ``parent`` for ``target`` and validate the result, never looking at retrieval or responses.

    With ``fork`` the mutant gets its own fork of the parent's state from ``executor`` (a state operator writes
    to it through a :class:`StateView`); a backend fault on the way is ``Proposal.error`` (no mutant at all)."""
    rng = random.Random(f"{seed}:{counter}")
    proposal = Proposal()
    mutation, reason, ok, final = None, "", False, False
    try:
        if fork:
            proposal.handle = executor.fork(parent)
        view = StateView(executor.backend, proposal.handle, listings=executor.listings,
                         key=parent.state_key) if op.kind == "state" else None
        if view is not None:
            view.remember_before()
        mutation = op.mutate(parent, reference, target, rng, view)
        verdict = _side_effect(view, mutation, op.meaning_preserving) or op.validate(parent, mutation, view)
        ok, reason, proposal.finding = verdict.ok, verdict.reason, verdict.finding
        if ok and view is not None and getattr(executor, "readback", False):  # verified: now read it back
            read = _read_back(executor, proposal.handle, parent, mutation)
            proposal.readback = read if read is not None and read.read else None
    except Rejected as exc:
        reason, final = str(exc), exc.final
    except (BackendError, NotImplementedError) as exc:
        proposal.error = (f"{op.name}:{target}", f"{type(exc).__name__}: {exc}")
        return proposal
    mid = f"x{counter:06d}"
    if mutation is not None:
        proposal.mutant = parent.child(mid, operator=op.name, query=mutation.query,
                                       provenance=mutation.provenance, ops=mutation.ops,
                                       obligation=obligation, detail=mutation.detail,
                                       descriptor=mutation.descriptor)
    else:  # the operator could not produce a mutant for this target: recorded as rejected
        proposal.mutant = parent.child(mid, operator=op.name, obligation=obligation, detail="not produced")
    proposal.valid, proposal.reason = ok and mutation is not None, reason
    proposal.mutation = mutation if proposal.valid else None
    proposal.final = not proposal.valid and (final or not op.varies(parent, target))
    return proposal


def _read_back(executor: Any, handle: str, parent: FuzzCase, mutation: Mutation) -> Any:
    """What reading the mutation's write back said (:class:`ufuzz.engine.readback.Readback`), or None after a backend
    fault, which is kept with the executor's faults (an error record) and never costs the mutant, which is
    verified."""
    checkpoint = executor.checkpoints.get(parent.checkpoint_id)
    try:
        return readback(executor.backend, handle, mutation.ops, mutation.results, executor.k,
                        times=written_times(checkpoint, (*parent.ops, *mutation.ops)))
    except BackendError as exc:
        executor.faults.append(("readback", f"{type(exc).__name__}: {exc}"))
        return None


def _side_effect(view: StateView | None, mutation: Mutation, unrelated: bool) -> Verdict | None:
    """A rejection with a state-level finding when the operation changed the state beyond what it asked for
    (listing before vs after, :mod:`ufuzz.operators.sideeffects`; deactivations count for the ``unrelated``,
    meaning-preserving edits only); None otherwise (the operator validates)."""
    if view is None or view.before is None or not mutation.ops:
        return None
    finding = sideeffects.find(view.before, view.list(), mutation.ops, mutation.results, deactivation=unrelated)
    return Verdict.side_effect(finding) if finding is not None else None
