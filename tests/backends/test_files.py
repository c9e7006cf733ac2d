"""File helpers of state-file adapters: sparse clone and removal of linked scratch directories."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.backends.files import clone_file, remove_linked_dirs

BLOCK = 1 << 16


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["zero", "data", "short"]), min_size=0, max_size=6))
def test_clone_is_byte_identical(tmp_path_factory, layout):
    d = tmp_path_factory.mktemp("clone")
    parts = {"zero": bytes(BLOCK), "data": os.urandom(BLOCK), "short": b"\x00" * 100 + b"x"}
    content = b"".join(parts[p] for p in layout)
    src, dst = d / "src", d / "dst"
    src.write_bytes(content)
    assert clone_file(src, dst) in ("reflink", "sparse")
    assert dst.read_bytes() == content
    assert dst.stat().st_size == len(content)


def test_sparse_clone_stores_no_zero_blocks(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(os.urandom(BLOCK) + bytes(16 * BLOCK) + os.urandom(BLOCK))
    how = clone_file(src, dst)
    assert dst.read_bytes() == src.read_bytes()
    if how == "sparse":  # the 1 MiB of zeros is a hole: far fewer blocks allocated than the source
        assert dst.stat().st_blocks * 512 < 4 * BLOCK < src.stat().st_blocks * 512


def test_remove_linked_dirs_follows_links_only(tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "s1").mkdir(parents=True)
    (scratch / "s1" / "graph.kuzu").write_bytes(b"x")
    folder = tmp_path / "gen0001"
    folder.mkdir()
    (folder / "graphiti").symlink_to(scratch, target_is_directory=True)
    (folder / "plain").mkdir()
    remove_linked_dirs(folder)
    assert not scratch.exists() and not (folder / "graphiti").exists()
    assert (folder / "plain").is_dir()  # real directories are the caller's to remove
