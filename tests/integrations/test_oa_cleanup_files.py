"""The `oa_cleanup` agent's file work, without a model: what it lists, what it deletes and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.agents.oa_cleanup import cleanup_dir, delete_file, list_files, sdk_installed
from workers.registry import load_agents

pytestmark = pytest.mark.unit


def test_it_lists_the_folder_and_deletes_only_inside_it(tmp_path: Path) -> None:
    folder = cleanup_dir(tmp_path)
    (folder / "tmp").mkdir()
    (folder / "tmp" / "a.tmp").write_text("abc")
    (folder / "keep.txt").write_text("k")
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    assert list_files(folder) == [{"path": "keep.txt", "bytes": 1}, {"path": "tmp/a.tmp", "bytes": 3}]

    refused = delete_file(folder, "../secret.txt")
    assert refused == "error: '../secret.txt' is not a file in the folder; nothing was deleted"
    assert delete_file(folder, str(outside)).startswith("error: ") and outside.exists()
    assert delete_file(folder, ".").startswith("error: ")
    assert delete_file(folder, "tmp/gone.tmp") == "error: there is no file 'tmp/gone.tmp'; nothing was deleted"
    assert delete_file(folder, "tmp/a.tmp") == "deleted tmp/a.tmp"
    assert list_files(folder) == [{"path": "keep.txt", "bytes": 1}]


def test_it_is_offered_where_the_sdk_is_installed() -> None:
    assert sdk_installed()  # the test extra installs openai-agents
    assert "oa_cleanup" in load_agents().names()
