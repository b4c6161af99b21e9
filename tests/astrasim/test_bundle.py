"""The bundle: system JSON keys and the custom prefix, workload ETs, custom ETs, run.sh and
README, communicator groups, and atomic replacement."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from backends.astrasim import (
    BUNDLE_MARKER,
    CUSTOM_KEYS,
    AstraExportError,
    AstraOptions,
    export,
    run_command,
)
from chakra_ir.collective import CollectiveKind
from chakra_ir.et import decode_program, read_et_file
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.outdir import Manifest
from tests.astrasim.helpers import (
    A2A,
    AG,
    AR,
    CHUNK,
    RS,
    attrs,
    baseline,
    bundle,
    load_json,
    workload_node,
)
from topologies import parse_topology

SPECS = ["ring:8", "torus:4x4", "stack:ring4*fc2*switch2,bw=[100GB/s,50GB/s,25GB/s]"]
KINDS = [
    (AR, "ring", "all-reduce-implementation-custom", 0),
    (AG, "ring", "all-gather-implementation-custom", 2),
    (RS, "ring", "reduce-scatter-implementation-custom", 7),
    (A2A, "direct", "all-to-all-implementation-custom", 6),
]
REQUIRED = {
    "scheduling-policy",
    "collective-optimization",
    "endpoint-delay",
    "active-chunks-per-dimension",
    "preferred-dataset-splits",
    "local-mem-bw",
    "all-reduce-implementation",
    "reduce-scatter-implementation",
    "all-gather-implementation",
    "all-to-all-implementation",
}


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize(("kind", "algorithm", "key", "comm_type"), KINDS)
def test_bundle(
    tmp_path: Path, spec: str, kind: CollectiveKind, algorithm: str, key: str, comm_type: int
) -> None:
    out, p, t, files = bundle(tmp_path, spec, kind, algorithm=algorithm)
    ndims = len(t.layout.shape) if t.layout else 0

    # The files export reports are exactly the files in the folder.
    on_disk = sorted(f for f in out.rglob("*") if f.is_file())
    assert sorted(files) == on_disk
    assert not list(tmp_path.glob(".bundle*")), "temporary folders left behind"

    # system.json: every key ASTRA-sim needs, one custom key with exactly one prefix.
    cfg = load_json(out / "system.json")
    assert set(cfg) >= REQUIRED
    assert cfg["preferred-dataset-splits"] >= 1
    for native in ("all-reduce", "reduce-scatter", "all-gather", "all-to-all"):
        assert cfg[f"{native}-implementation"] == ["ring"] * ndims
    custom = [k for k in cfg if k.endswith("-custom")]
    assert custom == [key]
    (prefix,) = cfg[key]
    assert isinstance(prefix, str) and not os.path.isabs(prefix)
    assert prefix == f"collective/{kind.value}"
    for r in range(p.num_ranks):
        assert (out / f"{prefix}.{r}.et").is_file()
    assert not (out / f"{prefix}.{p.num_ranks}.et").exists()
    # The custom ETs are the program.
    assert decode_program([out / f"{prefix}.{r}.et" for r in range(p.num_ranks)]) == p
    assert load_json(out / "remote_memory.json") == {"memory-type": "NO_MEMORY_EXPANSION"}

    # Workload: one file per NPU, one COMM_COLL_NODE with the canonical attribute types.
    wl = sorted((out / "workload").iterdir())
    assert len(wl) == t.num_npus
    c = p.collective
    expected_size = (
        c.input_chunks(0) * CHUNK if kind is AG else c.size_chunks * CHUNK
    )  # ASTRA-sim's all-gather size is the per-rank input
    for npu in range(t.num_npus):
        meta, node = workload_node(out / "workload" / f"{kind.value}.{npu}.et")
        assert meta.version
        assert node.type == pb.COMM_COLL_NODE
        a = attrs(node)
        assert a["is_cpu_op"] == ("bool_val", False)
        assert a["comm_type"] == ("int64_val", comm_type)
        assert a["comm_size"] == ("int64_val", expected_size)
        assert a["involved_dim"] == ("bool_list", [True] * ndims)
        assert "pg_name" not in a
        # collc's own reader agrees.
        trace = read_et_file(out / "workload" / f"{kind.value}.{npu}.et")
        assert len(trace) == 1
        assert trace.version == "0.0.4"
        assert trace.node(0).attrs["comm_size"] == expected_size

    # run.sh holds the exact command; README names the binary.
    run = (out / "run.sh").read_text()
    assert os.stat(out / "run.sh").st_mode & stat.S_IXUSR
    assert "AstraSim_Analytical_Congestion_Unaware" in run
    for arg in run_command(f"workload/{kind.value}", comm_group=False)[1:]:
        assert f"  {arg}" in run
    readme = (out / "README.txt").read_text()
    assert "AstraSim_Analytical_Congestion_Unaware" in readme
    assert "Congestion_Aware" in readme and "1-dim" in readme
    # Which model predicts which binary, one line each.
    lines = readme.splitlines()
    assert any(
        "--model analytical" in x and "AstraSim_Analytical_Congestion_Unaware" in x for x in lines
    )
    assert any(
        "--model astra-aware" in x and "AstraSim_Analytical_Congestion_Aware" in x for x in lines
    )
    assert "sys[i] finished" in readme
    # ASTRA-sim before a84fa60 ignores the reduce-scatter custom key: said for those only.
    assert ("reduce-scatter-implementation-custom" in readme) == (
        kind is CollectiveKind.REDUCE_SCATTER
    )
    marker = load_json(out / BUNDLE_MARKER)
    assert marker["target"] == "astra-sim"
    assert marker["workload_comm_size"] == expected_size


@pytest.mark.parametrize("kind", [AG, AR, RS, A2A], ids=lambda k: k.value)
def test_workload_sizes(tmp_path: Path, kind: CollectiveKind) -> None:
    """comm_size: all-gather's per-rank input; the others' collc size (the largest buffer:
    all-reduce's buffer, reduce-scatter's input, all-to-all's buffer)."""
    algorithm = "direct" if kind is A2A else "ring"
    out, p, _, _ = bundle(tmp_path, "ring:8", kind, algorithm=algorithm, chunk_bytes=1000)
    c = p.collective
    _, node = workload_node(out / "workload" / f"{kind.value}.0.et")
    got = attrs(node)["comm_size"][1]
    if kind is AG:
        assert got == c.chunks_per_rank * 1000 == c.input_chunks(0) * 1000
        assert got * c.num_ranks == c.size_chunks * 1000
    elif kind is AR:
        assert got == c.input_chunks(0) * 1000 == c.size_chunks * 1000
    else:
        assert got == c.input_chunks(0) * 1000 == c.size_chunks * 1000
        assert got == c.num_ranks * c.chunks_per_rank * 1000


def test_allgather_size_is_the_input_not_the_output(tmp_path: Path) -> None:
    t = parse_topology("ring:4")
    p = baseline(AG, t)
    assert p.collective.chunks_per_rank == 1
    out = tmp_path / "b"
    export(p, t, out, AstraOptions(chunk_bytes=1 << 20))
    _, node = workload_node(out / "workload" / "allgather.0.et")
    assert attrs(node)["comm_size"] == ("int64_val", 1 << 20)  # collc's size would be 4 MiB


def test_options_reach_the_files(tmp_path: Path) -> None:
    out, p, _, _ = bundle(
        tmp_path,
        "ring:4",
        AR,
        name="my_ar",
        reduce_micros=3,
        scheduling_policy="LIFO",
        collective_optimization="baseline",
        endpoint_delay_ns=0,
        active_chunks_per_dimension=2,
        preferred_dataset_splits=4,
        local_mem_bw_gb_per_s=1600,
        native_implementation="direct",
        chunk_bytes=64,
    )
    cfg = load_json(out / "system.json")
    assert cfg["all-reduce-implementation-custom"] == ["collective/my_ar"]
    assert cfg["scheduling-policy"] == "LIFO"
    assert cfg["collective-optimization"] == "baseline"
    assert cfg["endpoint-delay"] == 0
    assert cfg["active-chunks-per-dimension"] == 2
    assert cfg["preferred-dataset-splits"] == 4
    assert cfg["local-mem-bw"] == 1600 and isinstance(cfg["local-mem-bw"], int)
    assert cfg["all-gather-implementation"] == ["direct"]
    assert (out / "workload" / "my_ar.3.et").is_file()
    trace = read_et_file(out / "collective" / "my_ar.0.et")
    assert trace.metadata["collc_reduce_micros"] == 3
    assert trace.metadata["collc_chunk_bytes"] == 64
    assert "--workload-configuration=workload/my_ar" in (out / "run.sh").read_text()
    del p


def test_from_manifest() -> None:
    from chakra_ir import Collective

    m = Manifest(
        collective=Collective(AR, 4, 4),
        topology="ring:4",
        size_bytes=4096,
        chunk_bytes=1024,
        et_prefix="allreduce",
        extra={"reduce_micros": 2},
    )
    o = AstraOptions.from_manifest(m, name="x")
    assert (o.chunk_bytes, o.reduce_micros, o.name) == (1024, 2, "x")
    assert o.replace(reduce_micros=0).reduce_micros == 0


def test_program_is_not_mutated(tmp_path: Path) -> None:
    t = parse_topology("torus:4x4")
    p = baseline(AR, t)
    before = baseline(AR, t)
    export(p, t, tmp_path / "b", AstraOptions(chunk_bytes=8))
    assert p == before


def _fake_astrasim(tmp_path: Path) -> Path:
    """A stand-in for the binary that checks, from its working directory, that every path it
    is given (and the custom prefix of the system JSON) names existing files, as ASTRA-sim
    would open them, and prints its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "AstraSim_Analytical_Congestion_Unaware"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "args = dict(a[2:].split('=', 1) for a in sys.argv[1:])\n"
        "wl = args['workload-configuration']\n"
        "net = open(args['network-configuration']).read()\n"
        "npus = 1\n"
        "for line in net.splitlines():\n"
        "    if line.startswith('npus_count:'):\n"
        "        for x in line.split('[')[1].split(']')[0].split(','):\n"
        "            npus *= int(x)\n"
        "for i in range(npus):\n"
        "    assert os.path.isfile(f'{wl}.{i}.et'), (wl, i)\n"
        "cfg = json.load(open(args['system-configuration']))\n"
        "(key,) = [k for k in cfg if k.endswith('-custom')]\n"
        "(prefix,) = cfg[key]\n"
        "ranks = npus\n"
        "if 'comm-group-configuration' in args:\n"
        "    (group,) = json.load(open(args['comm-group-configuration'])).values()\n"
        "    ranks = len(group)\n"
        "for r in range(ranks):\n"
        "    assert os.path.isfile(f'{prefix}.{r}.et'), (prefix, r)\n"
        "json.load(open(args['remote-memory-configuration']))\n"
        "print('ok', os.getcwd(), ' '.join(sys.argv[1:]))\n"
    )
    script.chmod(0o755)
    return bindir


@pytest.mark.parametrize("placement", [(), (1, 3, 4, 6)])
def test_run_sh_runs_from_anywhere(tmp_path: Path, placement: tuple[int, ...]) -> None:
    out, _, _, _ = bundle(tmp_path, "ring:8", AR, placement=placement)
    bindir = _fake_astrasim(tmp_path)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = subprocess.run(
        ["sh", str(out / "run.sh")], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"ok {out.resolve()} ")
    expected = run_command("workload/allreduce", comm_group=bool(placement))
    assert res.stdout.split(" ", 2)[2].strip() == shlex.join(expected[1:])
    # ASTRA_SIM overrides the binary.
    env2 = {**os.environ, "ASTRA_SIM": str(bindir / "AstraSim_Analytical_Congestion_Unaware")}
    res2 = subprocess.run(["sh", str(out / "run.sh")], env=env2, capture_output=True, text=True)
    assert res2.returncode == 0, res2.stderr


def test_comm_group(tmp_path: Path) -> None:
    """4 ranks on NPUs 1, 3, 4, 6 of an 8-NPU ring: a communicator group, pg_name on the
    members' workload nodes, an idle node on the others."""
    out, p, _, files = bundle(tmp_path, "ring:8", AR, placement=(1, 3, 4, 6))
    assert load_json(out / "comm_group.json") == {"1": [1, 3, 4, 6]}
    assert out / "comm_group.json" in files
    assert "--comm-group-configuration=comm_group.json" in (out / "run.sh").read_text()
    cfg = load_json(out / "system.json")
    assert cfg["all-reduce-implementation-custom"] == ["collective/allreduce"]
    assert sorted(x.name for x in (out / "collective").iterdir()) == [
        f"allreduce.{r}.et" for r in range(4)
    ]
    for npu in range(8):
        meta, node = workload_node(out / "workload" / f"allreduce.{npu}.et")
        assert meta.version
        a = attrs(node)
        if npu in (1, 3, 4, 6):
            assert node.type == pb.COMM_COLL_NODE
            assert a["pg_name"] == ("string_val", "1")
            assert a["comm_size"] == ("int64_val", p.collective.size_chunks * CHUNK)
            assert "involved_dim" not in a
        else:
            assert node.type == pb.COMP_NODE
            assert node.duration_micros == 0
            assert not node.data_deps and not node.ctrl_deps
            assert a["is_cpu_op"] == ("bool_val", False)
    assert "communicator group" in (out / "README.txt").read_text().lower()


def test_prefix_subset_is_a_group(tmp_path: Path) -> None:
    """Ranks 0..3 on NPUs 0..3 of 8 (identity placement, fewer ranks): still a group."""
    out, _, _, _ = bundle(tmp_path, "ring:8", AG, placement=(0, 1, 2, 3))
    assert load_json(out / "comm_group.json") == {"1": [0, 1, 2, 3]}


def test_replaces_a_previous_bundle(tmp_path: Path) -> None:
    out, _, _, _ = bundle(tmp_path, "ring:8", AR, placement=(0, 2, 4, 6))
    assert (out / "comm_group.json").exists()
    (out / "log").mkdir()
    (out / "log" / "log.log").write_text("from a run")
    t = parse_topology("ring:4")
    files = export(baseline(AG, t), t, out, AstraOptions(chunk_bytes=8))
    assert not (out / "comm_group.json").exists()
    assert not (out / "log").exists()
    assert not (out / "collective" / "allreduce.0.et").exists()
    assert sorted(files) == sorted(f for f in out.rglob("*") if f.is_file())
    assert [x.name for x in tmp_path.iterdir()] == ["bundle"]


def test_empty_folder_is_fine(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    t = parse_topology("ring:4")
    export(baseline(AR, t), t, out, AstraOptions(chunk_bytes=8))
    assert (out / "system.json").is_file()


def test_refuses_a_foreign_folder(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    t = parse_topology("ring:4")
    with pytest.raises(AstraExportError, match="not empty and is not a collc ASTRA-sim bundle"):
        export(baseline(AR, t), t, out, AstraOptions(chunk_bytes=8))
    assert [x.name for x in out.iterdir()] == ["notes.txt"]
    assert [x.name for x in tmp_path.iterdir()] == ["mine"]


def test_refuses_a_collc_output_folder(tmp_path: Path) -> None:
    """A synthesize/compile output folder (manifest.json) is not a bundle: never replaced."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text("{}")
    t = parse_topology("ring:4")
    with pytest.raises(AstraExportError, match="not a collc ASTRA-sim bundle"):
        export(baseline(AR, t), t, out, AstraOptions(chunk_bytes=8))


def test_refuses_a_file(tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("x")
    t = parse_topology("ring:4")
    with pytest.raises(AstraExportError, match="is not a folder"):
        export(baseline(AR, t), t, out, AstraOptions(chunk_bytes=8))


def test_failure_while_writing_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import backends.astrasim.bundle as b

    def boom(*args: object, **kwargs: object) -> list[Path]:
        raise OSError("disk full")

    t = parse_topology("ring:4")
    p = baseline(AR, t)
    # A previous bundle stays as it was.
    prev = tmp_path / "prev"
    export(p, t, prev, AstraOptions(chunk_bytes=8))
    before = {f: f.read_bytes() for f in prev.rglob("*") if f.is_file()}
    monkeypatch.setattr(b, "write_et_files", boom)
    with pytest.raises(OSError, match="disk full"):
        export(p, t, prev, AstraOptions(chunk_bytes=16))
    assert {f: f.read_bytes() for f in prev.rglob("*") if f.is_file()} == before
    # A new one leaves no folder, not even the parents it created.
    with pytest.raises(OSError, match="disk full"):
        export(p, t, tmp_path / "a" / "b" / "new", AstraOptions(chunk_bytes=8))
    assert sorted(x.name for x in tmp_path.iterdir()) == ["prev"]


def test_custom_keys_cover_the_comm_types() -> None:
    from backends.astrasim import COMM_TYPES

    assert set(CUSTOM_KEYS) == set(COMM_TYPES)
    assert {COMM_TYPES[k] for k in COMM_TYPES} == {
        pb.ALL_REDUCE,
        pb.ALL_GATHER,
        pb.ALL_TO_ALL,
        pb.REDUCE_SCATTER,
    }
    assert COMM_TYPES[AR] == pb.ALL_REDUCE and COMM_TYPES[AG] == pb.ALL_GATHER
    assert COMM_TYPES[A2A] == pb.ALL_TO_ALL and COMM_TYPES[RS] == pb.REDUCE_SCATTER
