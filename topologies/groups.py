"""Process groups: sets of NPUs that run a collective among themselves.

A training step runs many collectives at once on different groups of NPUs (tensor-parallel
groups inside a node, data-parallel groups across nodes). `Groups` is the one group type of
collc; `parse_groups` reads the one spec grammar every command takes (``--groups``):

- ``8``: consecutive groups of 8 NPUs (``0-7``, ``8-15``, ...) over every NPU;
- ``stride:8``: NPUs ``i, i+8, i+16, ...`` for ``i`` in ``0..7``, so 8 groups;
- ``block:2x2``: blocks of a grid topology (mesh, torus, stack; dimension 0 fastest), here 2
  NPUs along dimension 0 by 2 along dimension 1; one size per dimension of the grid;
- ``0-7;8-15``: explicit groups separated by ``;``, NPUs and ranges by ``,``;
- a JSON file (a path ending in ``.json``): ASTRA-sim's communicator-group configuration
  ``{"<id>": [npus], ...}``, groups in the order of their ids.

`Groups` allows groups that overlap (ASTRA-sim's communicator groups do: a tensor-parallel and
a data-parallel group share NPUs, for different collectives); one collective call needs
disjoint groups of equal size (`Groups.check_disjoint`), because each rank holds one buffer
of that call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from topologies.atomic import write_text_atomically
from topologies.errors import CollcError
from topologies.jsonfile import load_json
from topologies.topology import Topology


class GroupsError(CollcError):
    """A group spec or communicator-group file that cannot be read or does not fit."""


@dataclass(frozen=True)
class Groups:
    """Process groups of NPUs: ``members[g]`` lists group ``g``'s NPUs in group order (its
    group-local ranks). ``source`` is where they came from (the spec or the file), for
    messages."""

    members: tuple[tuple[int, ...], ...]
    source: str = ""
    ids: tuple[int, ...] = ()
    """The communicator-group ids of ``members`` when read from ASTRA-sim's JSON (the names a
    workload's ``pg_name`` gives); empty otherwise."""

    def __len__(self) -> int:
        return len(self.members)

    @property
    def npus(self) -> tuple[int, ...]:
        """Every NPU in some group, ascending."""
        return tuple(sorted({x for g in self.members for x in g}))

    @property
    def size(self) -> int:
        """NPUs per group (the first group's count)."""
        return len(self.members[0]) if self.members else 0

    def describe(self) -> str:
        sizes = {len(g) for g in self.members}
        if len(sizes) == 1:
            return f"{len(self.members)} groups of {self.size}"
        return f"{len(self.members)} groups"

    def check_topology(self, topology: Topology) -> None:
        """Raise GroupsError unless every NPU named is an NPU of ``topology``."""
        n = topology.num_npus
        for g, members in enumerate(self.members):
            for x in members:
                if not 0 <= x < n:
                    raise GroupsError(
                        f"{self._where()}group {g} names NPU {x}, which {topology.spec} does not "
                        f"have (NPUs 0..{n - 1})"
                    )

    def check_disjoint(self) -> None:
        """Raise GroupsError unless the groups can run one collective call together: at least
        two, disjoint, of equal size, none empty, no NPU twice in a group."""
        if len(self.members) < 2:
            raise GroupsError(f"{self._where()}give at least two groups (one group is no groups)")
        seen: dict[int, int] = {}
        for g, members in enumerate(self.members):
            if len(members) != self.size:
                raise GroupsError(
                    f"{self._where()}groups of one collective must have equal sizes: group 0 has "
                    f"{self.size} NPUs, group {g} has {len(members)}"
                )
            for x in members:
                if x in seen:
                    where = "twice in group" if seen[x] == g else f"in groups {seen[x]} and"
                    raise GroupsError(
                        f"{self._where()}NPU {x} is {where} {g}: the groups of one collective "
                        "must not overlap (each rank holds one buffer)"
                    )
                seen[x] = g

    def check_covers(self, npus: Sequence[int]) -> None:
        """Raise GroupsError unless the groups hold exactly the NPUs ``npus`` (a placement)."""
        want, have = set(npus), set(self.npus)
        if want - have:
            raise GroupsError(
                f"{self._where()}NPU {min(want - have)} runs a rank of the collective but is in "
                "no group"
            )
        if have - want:
            raise GroupsError(
                f"{self._where()}NPU {min(have - want)} is in a group but runs no rank of the "
                "collective"
            )

    def _where(self) -> str:
        return f"--groups {self.source}: " if self.source else ""

    # -- ASTRA-sim's communicator-group JSON ---------------------------------------------------
    def to_astra_json(self) -> dict[str, list[int]]:
        """``{"1": [npus], "2": [...]}``: ids from 1 (ASTRA-sim reserves 0 for every NPU)."""
        return {str(g + 1): list(m) for g, m in enumerate(self.members)}

    def write_astra_json(self, path: Path) -> None:
        """Write `to_astra_json` to ``path`` (a temporary file, then renamed)."""
        text = json.dumps(self.to_astra_json(), indent=1) + "\n"
        write_text_atomically(path, text)


def read_astra_groups(path: Path) -> Groups:
    """Read ASTRA-sim's communicator-group JSON ``{"<id>": [npus]}`` (ids positive integers),
    groups in ascending id order. Raises GroupsError naming the file and the entry."""
    data = load_json(path, GroupsError)
    if not isinstance(data, dict) or not data:
        raise GroupsError(f'{path}: expected an object {{"<id>": [npus], ...}} with groups')
    entries: list[tuple[int, tuple[int, ...]]] = []
    for key, value in data.items():
        try:
            gid = int(key)
        except ValueError:
            raise GroupsError(f"{path}: group id {key!r} is not an integer") from None
        if gid <= 0:
            raise GroupsError(f"{path}: group id {key!r} must be positive (0 means every NPU)")
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in value)
        ):
            raise GroupsError(f"{path}: group {key!r} must be a non-empty list of NPU ids")
        if any(x < 0 for x in value):
            raise GroupsError(f"{path}: group {key!r} names a negative NPU")
        entries.append((gid, tuple(value)))
    entries.sort()
    return Groups(tuple(m for _, m in entries), str(path), tuple(gid for gid, _ in entries))


def parse_groups(text: str, topology: Topology) -> Groups:
    """The groups ``text`` names on ``topology`` (see the module docstring); checked against
    the topology. Raises GroupsError with the spec in the message."""
    spec = text.strip()
    if not spec:
        raise GroupsError("--groups: empty spec")
    if spec.endswith(".json"):
        groups = read_astra_groups(Path(spec))
    else:
        groups = Groups(_parse_spec(spec, topology), spec)
    if not groups.members:
        raise GroupsError(f"--groups {spec}: no groups")
    groups.check_topology(topology)
    return groups


def _parse_spec(spec: str, topology: Topology) -> tuple[tuple[int, ...], ...]:
    n = topology.num_npus

    def count(word: str, what: str) -> int:
        if not word.isdigit() or len(word) > 9 or int(word) < 1:
            raise GroupsError(f"--groups {spec}: {what} must be a positive integer, got {word!r}")
        return int(word)

    if spec.isdigit():
        size = count(spec, "the group size")
        if n % size:
            raise GroupsError(
                f"--groups {spec}: {n} NPUs do not split into groups of {size} "
                "(give the groups explicitly, e.g. 0-7;8-15)"
            )
        return tuple(tuple(range(s, s + size)) for s in range(0, n, size))
    if spec.startswith("stride:"):
        stride = count(spec[len("stride:") :], "the stride")
        if n % stride:
            raise GroupsError(f"--groups {spec}: {n} NPUs do not split by a stride of {stride}")
        return tuple(tuple(range(i, n, stride)) for i in range(stride))
    if spec.startswith("block:"):
        return _blocks(spec, topology)
    groups = []
    for part in spec.split(";"):
        members: list[int] = []
        for item in part.split(","):
            item = item.strip()
            lo, sep, hi = item.partition("-")
            if not lo.isdigit() or (sep and not hi.isdigit()) or len(lo) > 9 or len(hi) > 9:
                raise GroupsError(
                    f"--groups {spec}: cannot read {item!r} (use a size like 8, stride:8, "
                    "block:2x2, NPU lists like 0-7;8-15, or a .json file)"
                )
            a, b = int(lo), int(hi) if sep else int(lo)
            if b < a:
                raise GroupsError(f"--groups {spec}: the range {item!r} runs backwards")
            if b >= n:
                raise GroupsError(
                    f"--groups {spec}: NPU {b} is not in {topology.spec} (NPUs 0..{n - 1})"
                )
            members.extend(range(a, b + 1))
        groups.append(tuple(members))
    return tuple(groups)


def _blocks(spec: str, topology: Topology) -> tuple[tuple[int, ...], ...]:
    shape = topology.shape
    if not shape:
        raise GroupsError(f"--groups {spec}: {topology.spec} is not a grid (block: needs one)")
    words = spec[len("block:") :].split("x")
    if len(words) != len(shape) or not all(w.isdigit() and 0 < len(w) < 10 for w in words):
        raise GroupsError(
            f"--groups {spec}: give one block size per dimension of the {len(shape)}-D grid "
            f"{topology.spec}, e.g. block:{'x'.join('2' for _ in shape)}"
        )
    block = [int(w) for w in words]
    for d, (b, s) in enumerate(zip(block, shape, strict=True)):
        if b < 1 or s % b:
            raise GroupsError(
                f"--groups {spec}: dimension {d} has {s} NPUs, which blocks of {b} do not split"
            )
    strides = [1]
    for s in shape[:-1]:
        strides.append(strides[-1] * s)

    def coords(counts: Sequence[int]) -> list[list[int]]:
        out: list[list[int]] = [[]]
        for c in counts:
            out = [[*p, i] for i in range(c) for p in out]
        return out

    groups = []
    for origin in coords([s // b for s, b in zip(shape, block, strict=True)]):
        members = []
        for off in coords(block):
            members.append(
                sum(
                    (o * b + x) * st
                    for o, b, x, st in zip(origin, block, off, strides, strict=True)
                )
            )
        groups.append(tuple(members))
    return tuple(groups)
