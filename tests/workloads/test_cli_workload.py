"""``collc workload simulate`` in-process: the JSON report, the timeline, and bad input as one
line and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from backends.sim import simulate
from collc.cli import cli
from collc.pipeline import cost_model_for, program_for
from tests.workloads.build import AR, coll, comp, mem, same, workload
from topologies import parse_topology
from workloads.chakra_io import write_workload
from workloads.engine import CollCall

S = 1 << 20
STEP = int(500 + (S // 8) / 50)
"""One ring step of an 8-NPU all-reduce of S on ring:8 (50 B/ns, 500 ns): 3121 ns."""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["workload", "simulate", *args])


def run_json(*args: str) -> Any:
    res = invoke(*args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def refused(*args: str) -> str:
    """The command fails with status 2 and one line ``collc: error: ...``; returns it."""
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = res.output.splitlines()
    assert len(lines) == 1, res.output
    assert lines[0].startswith("collc: error: "), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def wl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 NPUs: 2 µs of compute, then one all-reduce of 1 MiB on every NPU."""
    out = tmp_path_factory.mktemp("cli") / "wl"
    write_workload(same(8, [comp(0, 2), coll(1, AR, S, deps=(0,))]), out)
    return out


def test_analytical_json_is_the_closed_form(wl: Path) -> None:
    d = run_json(str(wl), "-t", "ring:8", "--model", "analytical")
    t = 14 * (STEP + 10) + 10
    assert d["iteration_ns"] == 2000 + t
    assert d["npus"] == 8 and d["nodes"] == 16 and d["collectives"] == 1
    assert d["node_types"] == {"COMP": 8, "COLL": 8}
    assert d["compute_ns"] == 2000
    assert d["exposed_communication_ns"] == t
    assert d["per_collective"] == [
        {
            "group": "all",
            "group_size": 8,
            "kind": "ALL_REDUCE",
            "comm_size": S,
            "count": 1,
            "total_ns": t,
            "mean_ns": t,
        }
    ]
    assert d["model"] == "analytical"
    assert d["system"]["endpoint_delay_ns"] == 10
    assert "links" not in d


def test_analytical_knobs_from_flags_and_system_json(wl: Path, tmp_path: Path) -> None:
    d = run_json(str(wl), "-t", "ring:8", "--model", "analytical", "--endpoint-delay", "0")
    assert d["iteration_ns"] == 2000 + 14 * STEP
    system = tmp_path / "sys.json"
    system.write_text(json.dumps({"endpoint-delay": 30, "all-reduce-implementation": ["direct"]}))
    d = run_json(str(wl), "-t", "ring:8", "--model", "analytical", "--system", str(system))
    # Direct: one reduce-scatter and one all-gather round, the slowest peer 4 hops away.
    assert d["iteration_ns"] == 2000 + 2 * (int(4 * 500 + (S // 8) / 50) + 30) + 30
    # A flag overrides the file.
    d = run_json(
        str(wl),
        "-t",
        "ring:8",
        "--model",
        "analytical",
        "--system",
        str(system),
        "--native",
        "ring",
    )
    assert d["iteration_ns"] == 2000 + 14 * (STEP + 30) + 30


def test_groups_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "g"
    groups = {"1": (0, 1), "2": (2, 3, 4, 5, 6, 7)}
    write_workload(
        workload(*([coll(0, AR, S, "1" if i < 2 else "2")] for i in range(8)), groups=groups), out
    )
    d = run_json(str(out), "-t", "ring:8", "--model", "analytical")
    pair = 2 * int(500 + (S // 2) / 50) + 3 * 10
    # The logical ring 2..7: the pair 7 -> 2 is 3 hops, the others 1; 10 steps of S // 6 and
    # 11 releases of 10 ns. NPUs 2..5 wait on a chain of 10 links back that crosses 7 -> 2 twice.
    c, e = int(3 * 500 + (S // 6) / 50), int(500 + (S // 6) / 50)
    six = 110 + 2 * c + 8 * e
    assert d["iteration_ns"] == max(pair, six)
    assert {g["group"]: (g["npus"], g["total_ns"]) for g in d["per_group"]} == {
        "1": (2, pair),
        "2": (6, six),
    }
    # --comm-groups replaces the folder's groups: NPU 0 joins group 2, on which it issues
    # nothing, so the members disagree on the group's first collective.
    g = tmp_path / "g.json"
    g.write_text('{"1": [0, 1], "2": [2, 3, 4, 5, 6, 7, 0]}')
    line = refused(str(out), "-t", "ring:8", "--comm-groups", str(g))
    assert "collective 0 of group '2'" in line


def test_congestion_with_a_timeline(wl: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    d = run_json(
        str(wl), "-t", "ring:8", "--model", "congestion", "-a", "ring", "--timeline", str(trace)
    )
    topo = parse_topology("ring:8")
    cost = cost_model_for("on-arrival")
    e = program_for(topo, ("ring", {}), cost=cost, chunks_per_npu=1, seed=0)(
        CollCall(AR, S, tuple(range(8)))
    )
    alone = simulate(e.program, topo, e.chunk_bytes, cost=cost).finish_ns
    assert d["iteration_ns"] == pytest.approx(2000 + alone, rel=1e-12)
    assert d["model"] == "congestion" and d["algorithm"] == "ring" and d["programs"] == 1
    assert d["messages"] == 8 * 14
    assert d["links"]["count"] == 8  # the ring uses one direction of every link
    assert d["files"] == [str(trace)]
    doc = json.loads(trace.read_text())
    events = doc["traceEvents"]
    names = {
        e["pid"]: e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "process_name"
    }
    for npu in range(8):
        assert names[1000 + npu] == f"NPU {npu}"
    # One complete event per node: compute on thread 0, the collective on thread 1.
    for npu in range(8):
        mine = sorted(
            (e["tid"], e["ts"], e["dur"])
            for e in events
            if e["ph"] == "X" and e["pid"] == 1000 + npu
        )
        assert mine[0] == (0, 0.0, 2.0)
        assert mine[1][:2] == (1, 2.0)
        assert len(mine) == 2
    # Link tracks too.
    assert any(e["ph"] == "X" and e["pid"] < 1000 for e in events)
    assert doc["otherData"]["iteration_ns"] == d["iteration_ns"]


def test_the_human_report(wl: Path) -> None:
    res = invoke(str(wl), "-t", "ring:8", "--model", "analytical")
    assert res.exit_code == 0, res.output
    assert "8 NPUs, 16 nodes, 1 collectives" in res.output
    assert f"iteration          {(2000 + 14 * (STEP + 10) + 10) / 1000:,.2f} us" in res.output


# -- bad input ----------------------------------------------------------------------------


def test_a_truncated_et_file(wl: Path, tmp_path: Path) -> None:
    out = tmp_path / "t"
    write_workload(same(8, [comp(0, 2), coll(1, AR, S, deps=(0,))]), out)
    victim = out / "workload.3.et"
    victim.write_bytes(victim.read_bytes()[:-3])
    line = refused(str(out), "-t", "ring:8")
    assert str(victim) in line


def test_an_unknown_pg_name(tmp_path: Path) -> None:
    out = tmp_path / "u"
    write_workload(same(8, [coll(0, AR, S, "5")], {"1": (0, 1)}), out)
    line = refused(str(out), "-t", "ring:8", "--model", "analytical")
    assert str(out / "workload.0.et") in line
    assert "node 0" in line and "pg_name '5'" in line and "groups: 1" in line


def test_groups_naming_an_npu_outside_the_workload(wl: Path, tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    g.write_text('{"1": [0, 9]}')
    line = refused(str(wl), "-t", "ring:8", "--comm-groups", str(g))
    assert str(g) in line and "NPU 9" in line


def test_a_workload_for_another_number_of_npus(wl: Path) -> None:
    line = refused(str(wl), "-t", "ring:16")
    assert str(wl) in line and "8 NPUs" in line and "16" in line


@pytest.mark.parametrize(
    "value", ["1", "1,0", "-1,2", "a,b", "1,2,3", "nan,1", "inf,1", "0,1e-300", "1e308,1"]
)
def test_a_bad_remote_mem(wl: Path, value: str) -> None:
    line = refused(str(wl), "-t", "ring:8", "--remote-mem", value)
    assert "--remote-mem" in line


def test_memory_nodes_without_remote_mem(tmp_path: Path) -> None:
    out = tmp_path / "m"
    write_workload(same(2, [mem(0, 1000)]), out)
    line = refused(str(out), "-t", "ring:2", "--model", "analytical")
    assert str(out / "workload.0.et") in line and "--remote-mem" in line
    d = run_json(str(out), "-t", "ring:2", "--model", "analytical", "--remote-mem", "100,3")
    assert d["iteration_ns"] == 100 + 1000 // 3


@pytest.mark.parametrize("model", ["analytical", "congestion"])
def test_a_node_longer_than_collc_times_is_refused(tmp_path: Path, model: str) -> None:
    """A corrupt duration, or a roofline far too slow, names the node instead of overflowing."""
    out = tmp_path / "long"
    write_workload(same(2, [comp(0, 2**63 - 1)]), out)
    line = refused(str(out), "-t", "ring:2", "--model", model)
    assert "workload.0.et" in line and "more than the 1e+12 ns a node may take" in line
    out = tmp_path / "roof"
    write_workload(same(2, [comp(0, 0, num_ops=10**12, tensor_size=1)]), out)
    args = ("--roofline", "--local-mem-bw", "1e-6", "--peak-perf", "1e-6")
    line = refused(str(out), "-t", "ring:2", "--model", model, *args)
    assert "more than the 1e+12 ns a node may take" in line


@pytest.mark.parametrize("value", ["nope", "ring,allreduce=nope", "pg:1=nope"])
def test_an_unknown_producer(wl: Path, value: str) -> None:
    line = refused(str(wl), "-t", "ring:8", "-a", value)
    assert "unknown producer 'nope'" in line


def test_a_topology_without_an_astra_sim_network(wl: Path) -> None:
    line = refused(str(wl), "-t", "uniring:8", "--model", "analytical")
    assert "ASTRA-sim network" in line


def test_a_missing_folder(tmp_path: Path) -> None:
    line = refused(str(tmp_path / "nothing"), "-t", "ring:8")
    assert str(tmp_path / "nothing") in line


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"endpoint-delay": "soon"}', "endpoint-delay 'soon' is not a int"),
        ('{"endpoint-delay": Infinity}', "not JSON: Infinity is not a JSON number"),
        ('{"endpoint-delay": -1}', "endpoint-delay -1 is not between 0 and 1e+12"),
        (
            '{"preferred-dataset-splits": 1e308}',
            "preferred-dataset-splits 100000000000000001097906362... is not",
        ),
        ('{"active-chunks-per-dimension": 0}', "active-chunks-per-dimension 0 is not between 1"),
        ('{"local-mem-bw": -1}', "local-mem-bw -1.0 is not 0 or between 1e-06 and 1e+09"),
        ('{"1": ' + "[" * 100000 + "]" * 100000 + "}", "not JSON: nested too deeply"),
        ('{"roofline-enabled": "0"}', "roofline-enabled '0' is not 0, 1, true or false"),
        ('{"peak-perf": 1e300}', "peak-perf 1e+300 is not 0 or between 1e-06 and 1e+09"),
    ],
)
def test_a_bad_system_json(wl: Path, tmp_path: Path, text: str, needle: str) -> None:
    system = tmp_path / "s.json"
    system.write_text(text)
    line = refused(str(wl), "-t", "ring:8", "--model", "analytical", "--system", str(system))
    assert str(system) in line and needle in line


def test_analytical_knobs_out_of_range_from_flags(wl: Path) -> None:
    line = refused(str(wl), "-t", "ring:8", "--model", "analytical", "--splits", "10000000")
    assert "preferred-dataset-splits 10000000 is not between 1 and 4096" in line


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--memory", "1e300"), ("--mem-bw", "1e300"), ("--peak-tflops", "0"), ("--memory", "nan")],
)
def test_generate_refuses_hardware_out_of_range(tmp_path: Path, flag: str, value: str) -> None:
    out = tmp_path / "wl"
    args = ["workload", "generate", "gpt3-125m", "--npus", "2", "--dp", "2", "-o", str(out)]
    res = CliRunner().invoke(cli, [*args, flag, value])
    assert res.exit_code == 2, res.output
    assert res.output.count("\n") == 1 and f"{flag} must lie between 1e-6 and 1e9" in res.output
    assert not out.exists()


def test_collectives_beyond_the_transfer_limit_are_refused(wl: Path) -> None:
    line = refused(str(wl), "-t", "ring:8", "--chunks-per-npu", "100000000")
    assert (
        "8 ranks x 800000000 chunks = 6,400,000,000 chunk transfers is more than the limit of 50,000,000"
        in line
    )
    line = refused(str(wl), "-t", "ring:8", "--chunks-per-npu", "4", "--max-transfers", "100")
    assert "8 ranks x 32 chunks = 256 chunk transfers is more than the limit of 100" in line


MARK = "ASTRA-sim would not run this"


def test_endpoint_delay_0_is_noted_and_refused_with_strict(wl: Path, tmp_path: Path) -> None:
    # A collective on every NPU: ASTRA-sim's unaware binary aborts at endpoint-delay 0.
    d = run_json(str(wl), "-t", "ring:8", "--model", "analytical", "--endpoint-delay", "0")
    assert [n for n in d["notes"] if n.startswith(MARK) and "endpoint-delay 0" in n]
    assert d["iteration_ns"] == 2000 + 14 * STEP  # still timed, with the note
    res = invoke(str(wl), "-t", "ring:8", "--model", "analytical", "--endpoint-delay", "0")
    assert res.exit_code == 0 and "  note: ASTRA-sim would not run this" in res.output
    line = refused(
        str(wl), "-t", "ring:8", "--model", "analytical", "--endpoint-delay", "0", "--strict"
    )
    assert "--strict: ASTRA-sim would not run this: endpoint-delay 0" in line
    # The default endpoint delay: no note; --strict runs.
    assert run_json(str(wl), "-t", "ring:8", "--model", "analytical", "--strict")["notes"] == []
    # Only groups smaller than the cluster: their rings release in 10 ns, ASTRA-sim runs it.
    out = tmp_path / "g"
    groups = {"1": (0, 1, 2, 3), "2": (4, 5, 6, 7)}
    write_workload(
        workload(*([coll(0, AR, S, "1" if i < 4 else "2")] for i in range(8)), groups=groups), out
    )
    d = run_json(str(out), "-t", "ring:8", "--model", "analytical", "--endpoint-delay", "0")
    assert d["notes"] == []


def test_per_link_bandwidth_is_noted_in_the_analytical_mode(wl: Path) -> None:
    spec = "ring:8,linkbw=3-4:25GB/s"
    d = run_json(str(wl), "-t", spec, "--model", "analytical")
    assert [n for n in d["notes"] if n.startswith(MARK) and "different bandwidth" in n]
    line = refused(str(wl), "-t", spec, "--model", "analytical", "--strict")
    assert "different bandwidth" in line
