import pytest

from cloudsched.io import atomic_path, atomic_write_text


def test_atomic_write_replaces(tmp_path):
    p = tmp_path / "a" / "b.txt"
    atomic_write_text(p, "one")
    atomic_write_text(p, "two")
    assert p.read_text() == "two"
    assert [q.name for q in p.parent.iterdir()] == ["b.txt"]


def test_failed_write_keeps_previous_content(tmp_path):
    p = tmp_path / "b.txt"
    p.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(p) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert p.read_text() == "old"
    assert [q.name for q in tmp_path.iterdir()] == ["b.txt"]


def test_written_files_follow_the_umask(tmp_path):
    import os

    p = atomic_write_text(tmp_path / "c.txt", "x")
    mask = os.umask(0)
    os.umask(mask)
    assert (p.stat().st_mode & 0o777) == 0o666 & ~mask
