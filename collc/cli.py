"""The ``collc`` command line: the group that assembles the commands of `collc.commands`.

Library code raises typed errors; `collc.exit_status` alone turns them into a one-line message
on stderr and an exit status: 2 for bad input or a failed step, 1 when ``collc verify`` finds
a program wrong, 0 otherwise.

Start-up: importing this module loads no numpy, networkx, lark, protobuf, ortools,
matplotlib, optuna or ray (tests/test_cli_startup.py). Option choices come from
`collc.registry`; each command imports what it needs when it runs. Keep that rule for every
command added.
"""

from __future__ import annotations

import click

from collc.commands.bench import bench
from collc.commands.bounds import bounds
from collc.commands.compile import compile_cmd
from collc.commands.demo import demo
from collc.commands.explore import explore
from collc.commands.export import export
from collc.commands.import_xml import import_cmd
from collc.commands.inspect import inspect
from collc.commands.libra import libra
from collc.commands.replay import replay
from collc.commands.simulate import simulate
from collc.commands.synthesize import synthesize
from collc.commands.tune import tune
from collc.commands.verify import verify_cmd
from collc.commands.view import view
from collc.commands.workload import workload
from collc.exit_status import ErrorMappingGroup, run


@click.group(cls=ErrorMappingGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="collc", prog_name="collc")
def cli() -> None:
    """collc: a compiler toolchain for collective-communication algorithms."""


cli.add_command(synthesize)
cli.add_command(bounds)
cli.add_command(verify_cmd)
cli.add_command(inspect)
cli.add_command(simulate)
cli.add_command(bench)
cli.add_command(tune)
cli.add_command(compile_cmd)
cli.add_command(import_cmd)
cli.add_command(export)
cli.add_command(replay)
cli.add_command(demo)
cli.add_command(workload)
cli.add_command(libra)
cli.add_command(view)
cli.add_command(explore)


def main() -> None:
    """The console script ``collc`` (and ``python -m collc``)."""
    run(cli, "collc")


if __name__ == "__main__":
    main()
