"""mixit.common.io's atomic folder: the whole folder or none of it."""

import pytest

from mixit.common.io import write_folder_atomic


def test_a_folder_appears_whole_and_a_failed_fill_leaves_nothing(tmp_path):
    def fill(staging):
        staging.mkdir()
        (staging / "a.txt").write_text("a")

    write_folder_atomic(tmp_path / "done", fill)
    assert [p.name for p in (tmp_path / "done").iterdir()] == ["a.txt"]

    def fail(staging):
        fill(staging)
        raise KeyboardInterrupt

    (tmp_path / ".cut.partial").mkdir()  # left by a copy killed outright
    with pytest.raises(KeyboardInterrupt):
        write_folder_atomic(tmp_path / "cut", fail)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done"]
