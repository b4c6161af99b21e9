"""What a run asks for: the `Request` a command fills from its flags, the cost model of a
send-completion rule, and the NPUs and process groups a request names on a topology."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chakra_ir.collective import CollectiveKind
from topologies.cost_model import DEFAULT_COMPLETION, Completion, CostModel
from topologies.errors import CollcError

if TYPE_CHECKING:
    from payloads.describe import Payload
    from topologies import Topology
    from topologies.groups import Groups

DEFAULT_ALGORITHM = "tacos"
"""The producer a request names when it names none (`collc.producers.ALGORITHMS`)."""


@dataclass(frozen=True)
class Request:
    """Everything `synthesize` needs; the CLI fills it from flags."""

    topology: str
    collective: CollectiveKind
    algorithm: str = DEFAULT_ALGORITHM
    size_bytes: int = 1 << 20
    chunks_per_npu: int = 1
    inplace: bool = False
    root: int = 0
    placement: str = ""
    seed: int = 0
    seeds: int = 1
    completion: str = DEFAULT_COMPLETION.value
    """The send-completion rule (`topologies.cost_model.Completion`)."""
    groups: str = ""
    """Process groups (`topologies.groups`): every group runs the collective at once."""
    groups_independent: bool = False
    """With ``groups``: TACOS synthesizes each group alone (else all jointly)."""
    max_transfers: int = 0
    """Refuse programs of more chunk transfers than this (`check_work`); 0: the default
    `MAX_TRANSFERS`."""
    max_work: int = 0
    """Refuse a synthesis of more estimated work than this (`check_work`, `estimate_work`); 0:
    the default `MAX_WORK`."""
    payload: str = ""
    """A payload spec (`payloads.describe`; empty: none): TACOS plans with its message sizes
    (`tacos.sized`), and the output folder records it for ``collc simulate``."""
    converter: str = "sw"
    """Format conversion at the endpoints under ``payload``: ``sw`` or ``hw``."""

    def cost_model(self) -> CostModel:
        """The cost model this request produces and times under."""
        return cost_model_for(self.completion)


@functools.lru_cache(maxsize=1)
def payload_of(spec: str) -> Payload:
    """The parsed payload ``spec`` (`payloads.describe.parse_payload`), kept for the next
    caller of the same spec so that real tensors are read once."""
    from payloads.describe import parse_payload

    return parse_payload(spec)


def cost_model_for(completion: str) -> CostModel:
    """The default cost model with send completion ``completion``; CollcError naming the
    choices for an unknown rule."""
    try:
        return CostModel(completion=Completion.parse(completion))
    except ValueError as e:
        raise CollcError(f"--completion: {e}") from None


def parse_placement(text: str, topology: Topology) -> tuple[int, ...]:
    """``0,2,4-7`` -> the NPUs ranks run on, in rank order."""
    npus: list[int] = []
    last = topology.num_npus - 1
    for part in text.split(","):
        part = part.strip()
        try:
            ends = [int(x) for x in part.split("-")] if "-" in part else [int(part)]
            if len(ends) > 2:
                raise ValueError
        except ValueError:
            raise CollcError(
                f"--placement: cannot read {part!r} (use NPU ids like 0,2,4-7)"
            ) from None
        for n in ends:  # each end checked before a range is built
            if not 0 <= n <= last:
                raise CollcError(f"--placement: NPU {n} is not in the topology (NPUs 0..{last})")
        if ends[0] > ends[-1]:
            raise CollcError(f"--placement: {part!r} is an empty range (write {ends[1]}-{ends[0]})")
        npus.extend(range(ends[0], ends[-1] + 1))
    if len(set(npus)) != len(npus):
        raise CollcError("--placement names an NPU twice")
    return tuple(npus)


def call_groups(spec: str, topology: Topology, placement: Sequence[int] = ()) -> Groups:
    """The groups ``spec`` names on ``topology``, checked for one collective call: disjoint,
    of equal size, and holding exactly the ``placement`` NPUs when one is given."""
    from topologies.groups import parse_groups

    groups = parse_groups(spec, topology)
    groups.check_disjoint()
    if placement:
        groups.check_covers(placement)
    return groups
