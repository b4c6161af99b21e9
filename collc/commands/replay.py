"""``collc replay``: a hardware program executed packet by packet, its postcondition checked
(exit 1 on a deadlock or a wrong result), with its cycles, links and buffers reported."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from collc.printing import emit, us, warn

if TYPE_CHECKING:
    from backends.replay import ReplayResult


@click.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--timeline", type=click.Path(path_type=Path), help="Write a Chrome/Perfetto trace.")
@click.option("--json", "as_json", is_flag=True)
def replay(folder: Path, timeline: Path | None, as_json: bool) -> None:
    """Execute a hardware program and check it (docs/hardware.md, Replay; FRED: docs/fred.md).

    Reports cycles and time, link utilisation, the fullest VC buffers, packets and
    packet-hops, whether the collective's postcondition holds, and a deadlock with its cycle
    of waiting buffers."""
    from backends.replay import ReplayOptions
    from backends.replay import replay as run_replay

    result = run_replay(folder, ReplayOptions(timeline=timeline is not None))
    if timeline is not None:
        from backends.replay.timeline import write_timeline

        write_timeline(result, timeline, warn)
    data = result.to_json()
    if timeline is not None:
        data["timeline"] = str(timeline)

    def human() -> None:
        r = result
        click.echo(
            f"{r.target} {r.topology}: {r.algorithm} {r.collective}, {r.messages} messages, "
            f"{r.packets} packets, {r.packet_hops} packet-hops"
        )
        p = r.parameters
        if r.target == "fred":
            _fred_lines(r, timeline)
            return
        click.echo(
            f"  packets of {p['packet_bytes']} B, {p['num_vcs']} VC(s) of "
            f"{p['buffer_depth_packets']} packets, router {p['router_pipeline_cycles']} "
            f"cycle(s), clock {p['clock_ghz']} GHz, completion {r.completion}"
        )
        if r.deadlock is not None:
            click.echo(f"  DEADLOCK: {r.deadlock['description']}")
        else:
            click.echo(f"  finished at cycle {r.cycles} ({us(r.time_ns)})")
        busiest = r.busiest_link()
        if busiest is not None and r.cycles:
            used = [lk for lk in r.links if lk.busy_cycles]
            mean = sum(lk.busy_cycles for lk in used) / len(used) / r.cycles if used else 0.0
            click.echo(
                f"  links: {len(used)} of {len(r.links)} used, mean utilisation {mean:.1%}, "
                f"busiest {busiest.src}->{busiest.dst} (port {busiest.port}) "
                f"{busiest.busy_cycles / r.cycles:.1%}"
            )
        full = r.max_buffer()
        if full is not None:
            click.echo(
                f"  fullest VC buffer: router {full.router} port {full.port} vc {full.vc} "
                f"(from {full.link_src}): {full.max_packets} of {p['buffer_depth_packets']} packets"
            )
        post = f"postcondition {r.postcondition}"
        if r.postcondition_message:
            post += f": {r.postcondition_message}"
        click.echo(f"  {post}")
        if timeline is not None:
            click.echo(f"  timeline: {timeline}")

    emit(as_json, data, human)
    if result.deadlock is not None or result.postcondition != "holds":
        click.get_current_context().exit(1)


def _fred_lines(r: ReplayResult, timeline: Path | None) -> None:
    """The human report of a FRED replay (phases rather than packets and buffers)."""
    p = r.parameters
    fix = f", fix: {p['fix']}" if p["fix"] else ""
    click.echo(
        f"  FRED_{p['m']}(P) switches{fix}; {p['phases']} phase(s), {p['flows']} flow(s), "
        f"{p['preemptions']} preemption(s)"
    )
    sizes = ", ".join(f"{k} {v} B" for k, v in p["switches"].items())
    click.echo(f"  configurations: {sizes} (of {p['memory_bytes']} B each)")
    if r.deadlock is not None:
        click.echo(f"  STALL: {r.deadlock['description']}")
    else:
        click.echo(f"  finished at {us(r.time_ns)}")
    post = f"postcondition {r.postcondition}"
    if r.postcondition_message:
        post += f": {r.postcondition_message}"
    click.echo(f"  {post}")
    if timeline is not None:
        click.echo(f"  timeline: {timeline}")
