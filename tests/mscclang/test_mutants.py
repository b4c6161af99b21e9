"""Mutation campaigns through the real CLI: mutated MSCCLang programs (``collc compile``) and
mutated MSCCL-IR XML (``collc import``) end with a result or a one-line error (exit 2), never
a traceback. ``benchmarks/bench_msccl_mutants.py`` runs thousands of the same mutants with
hang and memory figures; a failing case here is rebuilt from its class and seed."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mscclang.mutants import (
    SOURCE_CLASSES,
    XML_CLASSES,
    classify,
    mutate_source,
    mutate_xml,
    run_cli,
    source_bases,
    write_mutant,
    xml_bases,
)

SOURCES = source_bases()
XMLS = xml_bases()
ARGV = {"inplace_allgather_pairs.py": ["3", "2"]}
CAPS = ["--max-steps", "200000", "--max-ops", "20000"]
CAMPAIGN = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@CAMPAIGN
@given(st.sampled_from(SOURCE_CLASSES), st.integers(0, 2**32 - 1))
def test_mscclang_mutants(kind: str, seed: int) -> None:
    rng = random.Random(seed)
    name, text = rng.choice(SOURCES)
    mutant, what = mutate_source(text, kind, rng)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        write_mutant(path, mutant)
        args = ["compile", str(path), "-o", str(Path(tmp) / "out"), *CAPS]
        status, out = run_cli([*args, "--", *ARGV.get(name, [])])
    assert classify(status, out) != "traceback", (kind, seed, name, what, out[-2000:])


@CAMPAIGN
@given(st.sampled_from(XML_CLASSES), st.integers(0, 2**32 - 1))
def test_xml_mutants(kind: str, seed: int) -> None:
    rng = random.Random(seed)
    name, text = rng.choice(XMLS)
    mutant, what = mutate_xml(text, kind, rng)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.xml"
        write_mutant(path, mutant)
        status, out = run_cli(["import", str(path), "-o", str(Path(tmp) / "out")])
    assert classify(status, out) != "traceback", (kind, seed, name, what, out[-2000:])


def test_known_mutants() -> None:
    # The mutants issue 10 names: 20-digit counts, huge ngpus and s_chunks, rrcs -> rrs.
    text = next(t for n, t in XMLS if n == "ring_allreduce_fused")
    cases = [
        text.replace('cnt="1"', 'cnt="100000000000000000000"', 1),
        text.replace('ngpus="4"', 'ngpus="100000000000000000000"', 1),
        text.replace('s_chunks="0"', 's_chunks="1000000000"', 1),
        text.replace('type="rrcs"', 'type="rrs"', 1),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for k, mutant in enumerate(cases):
            assert mutant != text, k
            path = Path(tmp) / f"m{k}.xml"
            write_mutant(path, mutant)
            status, out = run_cli(["import", str(path), "-o", str(Path(tmp) / f"o{k}")])
            assert classify(status, out) == "refused", (k, out)
