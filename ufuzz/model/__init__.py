"""The shared model, below every other package: what a seed, a case, an execution and a reference are.

Seeds (``memory``, ``query``, ``reference``, ``seed``), the provenance graph derived from a checkpoint
(``provenance``), and the units the engine moves around (``case``: cases, state operations, obligations;
``execution``). Nothing here imports any other ufuzz package, so every layer above can share these types
without import cycles (``tests/test_layers.py`` enforces it).
"""

from ufuzz.model.case import CONTROL_SUFFIX, FuzzCase, Obligation, StateOp, state_key
from ufuzz.model.execution import Execution
from ufuzz.model.memory import Checkpoint, Entity, Fact, Memory
from ufuzz.model.provenance import Provenance, UndefinedReference
from ufuzz.model.query import SCOPES, MutationDescriptor, Query, QueryFields
from ufuzz.model.reference import RUBRIC_KEYS, Reference, Rubric
from ufuzz.model.seed import SCHEMA_VERSION, Seed, SeedSuite

__all__ = [
    "CONTROL_SUFFIX", "RUBRIC_KEYS", "SCHEMA_VERSION", "SCOPES", "Checkpoint", "Entity", "Execution", "Fact",
    "FuzzCase", "Memory", "MutationDescriptor", "Obligation", "Provenance", "Query", "QueryFields", "Reference",
    "Rubric", "Seed", "SeedSuite", "StateOp", "UndefinedReference", "state_key",
]
