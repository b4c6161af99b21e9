"""`topologies.atomic` (writing files whole) and `topologies.jsonfile` (reading JSON files)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from topologies.atomic import write_text_atomically
from topologies.errors import CollcError
from topologies.jsonfile import load_json


def test_a_file_is_replaced_whole_and_no_temporary_is_left(tmp_path: Path) -> None:
    target = tmp_path / "t.json"
    target.write_text("old")
    write_text_atomically(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_a_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text_atomically(link, "through")
    assert link.is_symlink() and real.read_text() == "through"


def test_a_device_is_written_to_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that opening for writing returns
    try:
        write_text_atomically(fifo, "through the pipe")
        assert os.read(reader, 100) == b"through the pipe"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    write_text_atomically("/dev/null", "nothing")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_errors_name_the_path_given(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    bad = tmp_path / "afile" / "x.json"
    with pytest.raises(OSError) as e:
        write_text_atomically(bad, "x")
    assert e.value.filename == str(bad)
    with pytest.raises(IsADirectoryError) as d:
        write_text_atomically(tmp_path, "x")
    assert d.value.filename == str(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.parametrize(
    ("data", "message", "where"),
    [
        (b'{"a": NaN}', "not JSON: NaN is not a JSON number", ""),
        (b'{"a": -Infinity}', "not JSON: -Infinity is not a JSON number", ""),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON: nested too deeply", ""),
        (b'{"a": 1,\n "b": }', "not JSON: Expecting value", ":2:7"),
        (b'{"a":\n "\xff"}', "not UTF-8: byte 0xff", ":2:3 (byte 8)"),
    ],
)
def test_json_errors_are_one_line_with_the_position(
    tmp_path: Path, data: bytes, message: str, where: str
) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(data)
    with pytest.raises(CollcError) as e:
        load_json(path, CollcError)
    assert e.value.message.startswith(message)
    assert str(e.value).startswith(f"{path}{where}: ") and "\n" not in str(e.value)


def test_json_larger_than_the_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text("[" + "0," * 100 + "0]")
    assert load_json(path, CollcError, max_bytes=1000) == [0] * 101
    with pytest.raises(CollcError, match="larger than 100 bytes"):
        load_json(path, CollcError, max_bytes=100)
    with pytest.raises(CollcError, match="cannot read"):
        load_json(tmp_path / "missing.json", CollcError)
