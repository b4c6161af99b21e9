"""The parser's cache (`mscclang_frontend.parse._parser`): building the LALR tables takes
seconds, so the parser is saved in a private folder of the user's cache, atomically, under a
key of the grammar, the options and the versions of Lark and Python, and loaded from there."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mscclang_frontend import parse

PROGRAM = Path(__file__).resolve().parents[2] / "examples" / "allreduce_ring.py"


def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, bytes]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cached = parse._cache_file(parse.GRAMMAR_PATH.read_text())
    assert cached is not None
    return cached


def test_saved_atomically_in_a_private_folder_and_loaded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path, key = _cache(monkeypatch, tmp_path)
    assert path.parent == tmp_path / "collc"
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0
    assert path.name == f"mscclang-{key.decode()}.lark"
    built = parse._parser()
    parse._save_cached(built, path, key)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left
    before = path.stat()
    # A new process: the parser comes from the file, which stays as it is.
    monkeypatch.setattr(parse, "_PARSER", None)
    loaded = parse._parser()
    assert loaded is not built
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    text = PROGRAM.read_text()
    got = repr(parse.parse_program(text, "p.py"))
    monkeypatch.setattr(parse, "_PARSER", built)
    assert got == repr(parse.parse_program(text, "p.py"))


def test_a_file_of_another_key_or_damaged_is_not_loaded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path, key = _cache(monkeypatch, tmp_path)
    parse._save_cached(parse._parser(), path, key)
    assert parse._load_cached(path, key) is not None
    assert parse._load_cached(path, b"0" * len(key)) is None
    path.write_bytes(key + b"\n" + b"not a pickle")
    assert parse._load_cached(path, key) is None
    path.unlink()
    assert parse._load_cached(path, key) is None


def test_no_cache_without_a_private_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    grammar = parse.GRAMMAR_PATH.read_text()
    # A folder that others may write is not used: the private temporary one is.
    shared = tmp_path / "shared"
    (shared / "collc").mkdir(parents=True)
    os.chmod(shared / "collc", 0o777)
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    monkeypatch.setattr(parse.tempfile, "gettempdir", lambda: str(private))
    cached = parse._cache_file(grammar)
    assert cached is not None and cached[0].parent == private / f"collc-{os.getuid()}"
    # A relative XDG_CACHE_HOME is ignored (the XDG rule): ~/.cache it is.
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cached = parse._cache_file(grammar)
    assert cached is not None and cached[0].parent == tmp_path / "home" / ".cache" / "collc"
    # Nowhere to write: nothing is cached, and the parser is still built.
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(parse.tempfile, "gettempdir", lambda: str(blocker))
    assert parse._cache_file(grammar) is None
    parse._save_cached(parse._parser(), blocker / "x.lark", b"k")  # no error
