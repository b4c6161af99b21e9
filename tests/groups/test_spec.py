"""The group spec grammar and ASTRA-sim's communicator-group JSON (`topologies.groups`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topologies import parse_topology
from topologies.groups import Groups, GroupsError, parse_groups, read_astra_groups

T88 = parse_topology("torus:8x8")


def test_consecutive_stride_and_blocks() -> None:
    assert parse_groups("8", T88).members[1] == tuple(range(8, 16))
    cols = parse_groups("stride:8", T88).members
    assert len(cols) == 8 and cols[3] == (3, 11, 19, 27, 35, 43, 51, 59)
    blocks = parse_groups("block:2x2", parse_topology("mesh:8x8")).members
    assert len(blocks) == 16
    assert (
        blocks[0] == (0, 1, 8, 9) and blocks[1] == (2, 3, 10, 11) and blocks[4] == (16, 17, 24, 25)
    )
    planes = parse_groups("block:4x2x1", parse_topology("torus:4x4x4")).members
    assert len(planes) == 8 and planes[0] == (0, 1, 2, 3, 4, 5, 6, 7)


def test_explicit_lists_keep_their_order() -> None:
    g = parse_groups("3,1-2;7,4-6", parse_topology("ring:8"))
    assert g.members == ((3, 1, 2), (7, 4, 5, 6))
    assert g.npus == tuple(range(1, 8))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty spec"),
        ("0", "positive integer"),
        ("7", "do not split into groups of 7"),
        ("stride:7", "stride of 7"),
        ("stride:x", "positive integer"),
        ("block:2", "one block size per dimension"),
        ("block:3x2", "blocks of 3 do not split"),
        ("0-3;5-2", "runs backwards"),
        ("0-3;4-99", "NPU 99 is not in"),
        ("0,a", "cannot read 'a'"),
        ("99999999999999999999", "positive integer"),
    ],
)
def test_bad_specs_name_the_problem(spec: str, message: str) -> None:
    with pytest.raises(GroupsError, match=message):
        parse_groups(spec, T88)


def test_block_needs_a_grid() -> None:
    with pytest.raises(GroupsError, match="not a grid"):
        parse_groups("block:2x2", parse_topology("switch:8"))


def test_disjoint_equal_and_covering() -> None:
    ring = parse_topology("ring:8")
    with pytest.raises(GroupsError, match="NPU 3 is in groups 0 and 1"):
        parse_groups("0-3;3-6", ring).check_disjoint()
    with pytest.raises(GroupsError, match="equal sizes"):
        parse_groups("0-3;4-5", ring).check_disjoint()
    with pytest.raises(GroupsError, match="at least two groups"):
        parse_groups("0-7", ring).check_disjoint()
    with pytest.raises(GroupsError, match="twice in group 0"):
        parse_groups("0,0;1,2", ring).check_disjoint()
    g = parse_groups("0-1;2-3", ring)
    g.check_disjoint()
    with pytest.raises(GroupsError, match="NPU 4 runs a rank"):
        g.check_covers([0, 1, 2, 3, 4])
    with pytest.raises(GroupsError, match="NPU 3 is in a group but runs no rank"):
        g.check_covers([0, 1, 2])


def test_astra_json_round_trip(tmp_path: Path) -> None:
    g = parse_groups("stride:4", T88)
    path = tmp_path / "groups.json"
    g.write_astra_json(path)
    data = json.loads(path.read_text())
    assert list(data) == [str(i) for i in range(1, 5)]
    back = read_astra_groups(path)
    assert back.members == g.members
    assert parse_groups(str(path), T88).members == g.members
    assert not list(tmp_path.glob(".*tmp*"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"\xff\xfe", "not UTF-8"),
        (b'{"1": [0, 1]', "not JSON"),
        (b"[]", "expected an object"),
        (b'{"a": [0]}', "is not an integer"),
        (b'{"0": [0]}', "must be positive"),
        (b'{"1": []}', "non-empty list"),
        (b'{"1": [0, true]}', "non-empty list"),
        (b'{"1": [-1]}', "negative NPU"),
    ],
)
def test_bad_astra_json(tmp_path: Path, text: bytes, message: str) -> None:
    path = tmp_path / "g.json"
    path.write_bytes(text)
    with pytest.raises(GroupsError, match=message) as e:
        read_astra_groups(path)
    assert str(path) in str(e.value)


def test_astra_json_npus_checked_against_the_topology(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text('{"2": [0, 1], "1": [2, 64]}')
    with pytest.raises(GroupsError, match="NPU 64"):
        parse_groups(str(path), T88)
    path.write_text('{"2": [0, 1], "1": [2, 3]}')
    assert parse_groups(str(path), T88).members == ((2, 3), (0, 1))  # by id


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_explicit_spec_round_trips_any_partition(data: st.DataObject) -> None:
    n = data.draw(st.integers(2, 24))
    npus = data.draw(st.permutations(list(range(n))))
    cuts = sorted(data.draw(st.sets(st.integers(1, n - 1), max_size=5)))
    parts = [npus[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    spec = ";".join(",".join(str(x) for x in p) for p in parts)
    g = parse_groups(spec, parse_topology(f"ring:{n}"))
    assert g.members == tuple(tuple(p) for p in parts)
    assert Groups(g.members).npus == tuple(range(n))
