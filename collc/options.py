"""The options several ``collc`` commands share: callbacks that parse an option's text into a
size, a time or a collective kind (a bad size or time is click's usage error, an unknown
collective one line), and the
``--completion`` and ``--max-transfers`` options and the ``--groups`` help with their texts.

Like every module `collc.cli` imports, it loads no heavy library (tests/test_cli_startup.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from chakra_ir.collective import CollectiveKind, parse_collective_kind
from collc import registry
from topologies.cost_model import COMPLETIONS
from topologies.errors import CollcError
from topologies.units import parse_size_bytes, parse_time_ns

_T = TypeVar("_T")


def _parsed(
    parse: Callable[[str], _T],
) -> Callable[[click.Context, click.Parameter, str | None], _T | None]:
    """A click callback: ``parse`` of an option's text (None when absent), its CollcError
    turned into click's usage error."""

    def callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> _T | None:
        if value is None:
            return None
        try:
            return parse(value)
        except CollcError as e:
            raise click.BadParameter(e.message) from None

    return callback


size_callback = _parsed(parse_size_bytes)
"""``--size``-like options: bytes (`topologies.units.parse_size_bytes`), None when absent."""
time_callback = _parsed(parse_time_ns)
"""Time options: nanoseconds (`topologies.units.parse_time_ns`), None when absent."""


def collective_callback(_ctx: click.Context, _param: click.Parameter, value: str) -> CollectiveKind:
    """``--collective``: the kind its text names (`chakra_ir.collective.parse_collective_kind`).
    An unknown name is one line listing the kinds, not click's usage message: it is the one
    value users type from memory."""
    try:
        return parse_collective_kind(value)
    except CollcError as e:
        raise CollcError(f"--collective: {e.message}") from None


_COMPLETION_HELP = (
    "When a send completes: on-arrival (ASTRA-sim's rule: what depends on a send waits for its "
    "delivery) or on-departure (its last byte has left the sender)."
)


def completion_option(default: str | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--completion`` option (`topologies.cost_model.COMPLETIONS`); ``None`` as the
    default: the folder's rule."""
    return click.option(
        "--completion",
        type=click.Choice(list(COMPLETIONS)),
        default=default,
        show_default=default is not None,
        help=_COMPLETION_HELP
        + ("" if default is not None else " Default: the folder's rule (needs --force to change)."),
    )


GROUPS_HELP = (
    "Process groups that each run the collective at once: 8 (consecutive groups of 8), "
    "stride:8, block:2x2 (grid blocks), 0-7;8-15 (explicit), or an ASTRA-sim communicator-group "
    ".json file. Groups are disjoint and of equal size."
)
"""The help of ``--groups`` (`topologies.groups`)."""


model_option = click.option(
    "--model",
    type=click.Choice(list(registry.SIM_MODELS)),
    default="congestion",
    show_default=True,
    help="; ".join(f"{k}: {v}" for k, v in registry.SIM_MODELS.items()),
)
"""``--model``: the simulator model that times a program (`backends.sim.MODELS`)."""


def max_transfers_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--max-transfers`` option of the commands that build programs: refuse ``what``
    (programs, a collective) of more chunk transfers than it, `registry.MAX_TRANSFERS` by
    default."""
    return click.option(
        "--max-transfers",
        type=click.IntRange(min=1),
        default=registry.MAX_TRANSFERS,
        show_default=True,
        help=f"Refuse {what} of more chunk transfers (ranks x chunks) than this.",
    )


PAYLOAD_HELP = (
    "What the data weighs on the wire: dense (the default), sparse:density=RHO[,value=fp16,"
    "format=auto|dense|bitmap|rlc|coo|csr|csc|blocks,shape=MxK,...] or tensor:FILE.npz|DIR "
    "(one tensor per rank). Each message weighs its contributions' union support in its "
    "format (auto: the fastest on its route, conversion included); see docs/payloads.md."
)


def payload_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--payload`` (a payload spec, `payloads.describe`) and ``--converter`` (hw or sw)."""
    f = click.option(
        "--converter",
        type=click.Choice(list(registry.CONVERTERS)),
        default=None,
        help="Format conversion at the endpoints: sw, or hw (the accelerator's converter, 4x "
        "faster).  [default: sw; simulate: the folder's]",
    )(f)
    return click.option("--payload", default=None, help=PAYLOAD_HELP)(f)
