"""The parameter set (PSA): reading, positioned errors, derived knobs, constraints, the
infeasible points and the satisfiability check before a study."""

from __future__ import annotations

from pathlib import Path

import pytest

from explore.expr import EvalError, parse_expr
from explore.network import ExploreError
from explore.psa import read_psa
from explore.space import Infeasible, Point, precheck, resolve
from topologies.errors import CollcError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "explore" / "gpt3_13b_1024.yaml"

SMALL = """\
name: small
dimensions: 2
workload:
  model: gpt3-125m
  npus: 16
  dp: [1, 2, 4, 8, 16]
  pp: [1, 2, 4]
collective:
  implementation: {values: [ring, direct]}
network:
  topology: {fixed: [ring, switch]}
  size: {fixed: [4, 4]}
  bandwidth: {range: [50, 200, 50], scope: same}
derived:
  tp: "npus // (dp * pp)"
constraints:
  - "dp * pp <= npus"
"""


def psa(text: str = SMALL, name: str = "p.yaml") -> object:
    return read_psa(name, text)


def test_reads_knobs_domains_and_scopes() -> None:
    p = read_psa("p.yaml", SMALL)
    names = [k.name for k in p.searched]
    assert names == ["dp", "pp", "implementation", "bandwidth"]
    assert p.knobs["bandwidth"].values == (50.0, 100.0, 150.0, 200.0)
    assert p.knobs["bandwidth"].params(2) == ["bandwidth"]
    assert p.knobs["implementation"].params(2) == ["implementation.0", "implementation.1"]
    assert p.knobs["topology"].fixed == ["ring", "switch"]
    assert p.knobs["latency"].fixed == [500.0, 500.0]  # default
    assert p.space_size() == 5 * 3 * 2 * 2 * 4


def test_example_psa_reads_and_has_cosmic_sized_space() -> None:
    p = read_psa(EXAMPLE)
    assert p.dims == 4
    assert p.space_size() > 10**12
    assert p.knobs["shape"].info.stack == "network"
    assert p.knobs["dp"].values[-1] == 1024


@pytest.mark.parametrize(
    ("change", "where", "words"),
    [
        (("  pp: [1, 2, 4]", "  pq: [1, 2, 4]"), ":7:3", "unknown knob 'pq' in workload"),
        (("  pp: [1, 2, 4]", "  pp: [1, two, 4]"), ":7:11", "knob 'pp': 'two' is not an integer"),
        (("  pp: [1, 2, 4]", "  pp: [1, 2, 2]"), ":7:7", "knob 'pp' lists a value twice"),
        (("  pp: [1, 2, 4]", "  pp: {range: [4, 1]}"), ":7:", "min <= max"),
        (("  pp: [1, 2, 4]", "  pp: {pow2: [5, 7]}"), ":7:", "no power of two"),
        (("  pp: [1, 2, 4]", "  pp: {values: [1], range: [1, 2]}"), ":7:", "knob 'pp'"),
        (("  pp: [1, 2, 4]", "  pp: {values: [1, 2], scope: same}"), ":7:", "takes no scope"),
        (("{fixed: [4, 4]}", "{fixed: [4, 4, 4]}"), ":12:", "one value per dimension (2)"),
        (('"npus // (dp * pp)"', '"npus // (dp * qq)"'), ":15:", "unknown knob 'qq'"),
        (('"npus // (dp * pp)"', '"npus.bit_length()"'), ":15:", "only the functions"),
        (('"dp * pp <= npus"', '"dp * pp <= "'), ":17:", "invalid expression"),
        (("  model: gpt3-125m", "  model: gpt9"), ":4:10", "unknown model 'gpt9'"),
        (("  tp: ", "  dp: "), ":15:3", "both searched and derived"),
        (("dimensions: 2", "dimensions: 0"), ":2:13", "dimensions"),
    ],
)
def test_bad_psa_names_file_line_and_knob(change: tuple[str, str], where: str, words: str) -> None:
    text = SMALL.replace(*change)
    assert text != SMALL
    with pytest.raises(CollcError) as e:
        read_psa("bad.yaml", text)
    assert str(e.value).startswith("bad.yaml" + where), str(e.value)
    assert words in str(e.value)
    assert "\n" not in str(e.value)


def test_unknown_column_points_into_the_expression() -> None:
    text = SMALL.replace('"npus // (dp * pp)"', '"npus // (dp * qq)"')
    with pytest.raises(ExploreError) as e:
        read_psa("bad.yaml", text)
    pos = e.value.pos
    assert pos is not None and pos.text[pos.column - 1 : pos.column + 1] == "qq"


def test_derived_cycle_is_refused() -> None:
    text = SMALL.replace('  tp: "npus // (dp * pp)"', '  tp: "microbatches"\n  microbatches: "tp"')
    with pytest.raises(CollcError, match="depend on themselves"):
        read_psa("bad.yaml", text)


def test_expressions_are_interpreted_not_run() -> None:
    e = parse_expr("[b / 2 if t == 'ring' else b for t, b in zip(kinds, bw)]", ["kinds", "bw"])
    assert e({"kinds": ["ring", "switch"], "bw": [100, 50]}) == [50.0, 50]
    with pytest.raises(ExploreError, match="not allowed"):
        parse_expr("[x for x in (lambda: 1)]", [])
    with pytest.raises(ExploreError, match="only the functions"):
        parse_expr("__import__('os')", [])
    with pytest.raises(EvalError):
        parse_expr("1 / x", ["x"])({"x": 0})


def test_resolve_derives_and_checks() -> None:
    p = read_psa("p.yaml", SMALL)
    base = {"implementation.0": "ring", "implementation.1": "direct", "bandwidth": 100.0}
    ok = resolve(p, {**base, "dp": 4, "pp": 2})
    assert isinstance(ok, Point)
    assert ok.values["tp"] == 2 and ok.derived == {"tp": 2}
    assert ok.values["bandwidth"] == [100.0, 100.0]
    assert ok.values["implementation"] == ["ring", "direct"]
    # LIBRA's cost: N * sum(bw * unit); two dims take InterNode (4 + 13 for a switch) and InterPod.
    assert ok.cost > 0 and ok.memory_gib > 0
    bad = resolve(p, {**base, "dp": 16, "pp": 2})  # tp = 0
    assert isinstance(bad, Infeasible) and bad.reason == "derived knob tp"
    heads = resolve(p, {**base, "dp": 1, "pp": 4})  # tp = 4 divides 12 heads; 12 layers / 4
    assert isinstance(heads, Point)
    odd = read_psa("p.yaml", SMALL.replace("pp: [1, 2, 4]", "pp: [1, 2, 4, 8]"))
    r = resolve(odd, {**base, "dp": 1, "pp": 8})  # 12 layers, 8 stages
    assert isinstance(r, Infeasible) and r.reason == "workload: pp divides the layers"


def test_memory_over_capacity_is_infeasible() -> None:
    p = read_psa("p.yaml", SMALL.replace("  npus: 16\n", "  npus: 16\n  memory_gib: 0.5\n"))
    r = resolve(
        p,
        {
            "implementation.0": "ring",
            "implementation.1": "ring",
            "bandwidth": 50.0,
            "dp": 16,
            "pp": 1,
        },
    )
    assert isinstance(r, Infeasible) and r.reason.startswith("memory")


def test_precheck_refuses_a_constraint_no_point_satisfies() -> None:
    text = SMALL.replace('  - "dp * pp <= npus"', '  - "dp * pp > 64"')
    with pytest.raises(ExploreError) as e:
        precheck(read_psa("bad.yaml", text))
    assert str(e.value).startswith("bad.yaml:17:")
    assert "no point satisfies 'dp * pp > 64'" in str(e.value)
    # Two constraints each satisfiable, but not together.
    text = SMALL.replace('  - "dp * pp <= npus"', '  - "dp >= 8"\n  - "dp * pp <= 4"')
    with pytest.raises(ExploreError, match="together"):
        precheck(read_psa("bad.yaml", text))
    notes = precheck(read_psa("p.yaml", SMALL))
    assert "pass every check" in notes[-1]


def test_precheck_refuses_network_that_never_matches_npus() -> None:
    text = SMALL.replace("{fixed: [4, 4]}", "{fixed: [4, 8]}")
    with pytest.raises(ExploreError, match="product of the sizes == npus"):
        precheck(read_psa("bad.yaml", text))


def test_single_stack_search_fixes_the_other_stacks_at_the_baseline() -> None:
    p = read_psa(EXAMPLE)
    net = p.restricted(("network",))
    assert [k.name for k in net.searched] == ["topology", "bandwidth", "shape"]
    assert net.knobs["dp"].fixed == 32 and net.knobs["implementation"].fixed == ["ring"] * 4
    wl = p.restricted(("workload",))
    assert {k.info.stack for k in wl.searched} == {"workload"}
    assert wl.knobs["topology"].fixed == ["ring", "fc", "ring", "switch"]
    assert wl.knobs["shape"].fixed == 1
    # The baseline itself is a valid point of the full set.
    base = resolve(p.restricted(()), {})
    assert isinstance(base, Point) and base.values["tp"] == 8
    assert base.values["size"] == [4, 8, 4, 8]
    text = SMALL + "baseline:\n  size: [4, 4, 4]\n"
    with pytest.raises(ExploreError, match="one value per dimension"):
        read_psa("bad.yaml", text)


def test_cosmic_parameter_set_translates() -> None:
    p = read_psa(ROOT / "examples" / "explore" / "cosmic_knobs_4.yaml")
    assert {"allreduce", "allgather", "reduce_scatter", "alltoall", "scheduling"} <= {
        k.name for k in p.searched
    }
    assert "pass every check" in precheck(p)[-1]
    base = resolve(p.restricted(()), {})
    assert isinstance(base, Point)


def test_free_knobs_feed_derived_knobs() -> None:
    text = SMALL.replace("  size: {fixed: [4, 4]}\n", "") + (
        "free:\n  shape: {stack: network, values: [0, 1]}\n"
    )
    text = text.replace("derived:\n", 'derived:\n  size: "[[2, 8], [4, 4]][shape]"\n')
    p = read_psa("p.yaml", text)
    assert "shape" in [k.name for k in p.searched]
    base = {
        "implementation.0": "ring",
        "implementation.1": "ring",
        "bandwidth": 50.0,
        "dp": 4,
        "pp": 1,
    }
    a = resolve(p, {**base, "shape": 0})
    b = resolve(p, {**base, "shape": 1})
    assert isinstance(a, Point) and isinstance(b, Point)
    assert a.values["size"] == [2, 8] and b.values["size"] == [4, 4] and a.key != b.key
    with pytest.raises(ExploreError, match="free knob 'tp'"):
        read_psa("bad.yaml", SMALL + "free:\n  tp: {stack: workload, values: [1, 2]}\n")
