"""collc's MSCCLang API: chunk, Ref operations, buffers, Check, XML, custom collectives."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chakra_ir import Buffer, format_program
from chakra_ir.program import Copy, Recv, Reduce, Send
from mscclang_frontend import CompiledProgram, CompileError, compile_all, compile_source, hooks
from tests.mscclang.helpers import PRELUDE, compile_error, run, snippet_error
from topologies.errors import CollcError


def prog(body: str, argv: tuple[str, ...] = ()) -> CompiledProgram:
    """Compile a program made of the prelude and ``body`` only."""
    return compile_source(PRELUDE + body, "t.py", argv)


ALLGATHER2 = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, False), 1):
    for r in range(2):
        c = chunk(r, Buffer.input, 0)
{extra}
        c.copy(r, Buffer.output, r)
        c.copy(1 - r, Buffer.output, r)
"""


def allgather2(extra: str = "") -> CompiledProgram:
    return prog(ALLGATHER2.format(extra=extra))


def test_chunk_of_an_empty_slot_is_none() -> None:
    out = allgather2('        print(chunk(r, Buffer.output, r), chunk(r, "nowhere", 3))').stdout
    assert out == "None None\nNone None\n"


def test_chunk_follows_inplace_aliases() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(3), AllGather(3, 2, True), 1):
    c = chunk(2, Buffer.input, 1)
    print(c.rank, c.buffer, c.index, c.size, c.get_origin_rank(), c.get_origin_index())
    for r in range(3):
        for i in range(2):
            for peer in range(3):
                if peer != r:
                    chunk(r, Buffer.input, i).copy(peer, Buffer.output, r * 2 + i)
"""
    compiled = prog(body)
    assert compiled.stdout == "2 Buffer.output 5 1 2 1\n"
    send = next(op for op in compiled.program.ops(2) if isinstance(op, Send))
    assert send.src.buffer is Buffer.OUTPUT and send.src.index == 4


def test_copy_returns_destination_and_self_copy_is_noop() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, False), 1):
    for r in range(2):
        c = chunk(r, Buffer.input, 0)
        d = c.copy(r, Buffer.output, r)
        print(d.rank, d.buffer, d.index, c.copy(r, Buffer.input, 0), d.copy(r, Buffer.output, r))
        d.copy(1 - r)
"""
    compiled = prog(body)
    assert compiled.stdout == "0 Buffer.output 0 None None\n1 Buffer.output 1 None None\n"
    assert compiled.recorded_ops == 4
    assert isinstance(compiled.program.ops(0)[0], Copy)


def test_scratch_copies_without_index_append() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, False), 1):
    for r in range(2):
        c = chunk(r, Buffer.input, 0)
        a = c.copy(1 - r, "stage")
        b = c.copy(1 - r, "stage")
        e = c.copy(1 - r, Buffer.scratch)
        print(a.index, b.index, e.index, a.buffer, e.buffer)
        c.copy(r, Buffer.output, r)
        b.copy(1 - r, Buffer.output, r)
"""
    compiled = prog(body)
    assert compiled.stdout == "0 1 0 stage Buffer.scratch\n0 1 0 stage Buffer.scratch\n"
    # "stage" (2 slots) comes first in each rank's scratch, Buffer.scratch (1 slot) after it.
    assert [int(x) for x in compiled.program.buffer_sizes[:, 2]] == [3, 3]
    recvs = [op for op in compiled.program.ops(1) if isinstance(op, Recv)]
    assert [(op.dst.buffer, op.dst.index) for op in recvs] == [
        (Buffer.SCRATCH, 0),
        (Buffer.SCRATCH, 1),
        (Buffer.SCRATCH, 2),
    ]


def test_reduce_returns_the_accumulator_and_lowers_to_recv_reduce() -> None:
    body = """
with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 1, True), 1):
    acc = chunk(1, Buffer.input, 0)
    same = acc.reduce(chunk(0, Buffer.input, 0))
    print(same is acc, same.rank)
    acc.copy(0, Buffer.input, 0)
"""
    compiled = prog(body)
    assert compiled.stdout == "True 1\n"
    recv = compiled.program.ops(1)[0]
    assert isinstance(recv, Recv) and recv.reduce and recv.peer == 0


def test_local_reduce_and_copy() -> None:
    body = """
with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 1, False), 1):
    chunk(0, Buffer.input, 0).copy(1, "tmp", 0)
    chunk(1, Buffer.input, 0).reduce(chunk(1, "tmp", 0))
    chunk(1, Buffer.input, 0).copy(1, Buffer.output, 0)
    chunk(1, Buffer.output, 0).copy(0, Buffer.output, 0)
"""
    ops = prog(body).program.ops(1)
    assert isinstance(ops[1], Reduce) and ops[1].src.buffer is Buffer.SCRATCH
    assert ops[1].deps == (0,)
    assert isinstance(ops[2], Copy)


def test_split_group_and_sizes() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 4, False), 1):
    for r in range(2):
        whole = chunk(r, Buffer.input, 0, size=4)
        a, b = whole.split(2)
        print(a.index, a.size, b.index, b.size, b.group(a).index, b.group(a).size)
        whole.copy(r, Buffer.output, r * 4)
        a.copy(1 - r, Buffer.output, r * 4)
        b.copy(1 - r, Buffer.output, r * 4 + 2)
"""
    compiled = prog(body)
    assert compiled.stdout == "0 2 2 2 0 4\n0 2 2 2 0 4\n"
    first = compiled.program.ops(0)[0]
    assert isinstance(first, Copy) and first.src.count == 4


def test_alltoall_chunks_know_their_destination() -> None:
    body = """
with MSCCLProgram("a2a", fully_connected(3), AllToAll(3, 1, False), 1):
    for r in range(3):
        for i in range(3):
            c = chunk(r, Buffer.input, i)
            if r == 1:
                print(i, c.get_dst_rank(), c.get_dst_index())
            c.copy(c.get_dst_rank(), Buffer.output, c.get_dst_index())
    Check()
"""
    assert prog(body).stdout == "0 0 1\n1 1 1\n2 2 1\n"


def test_check_prints_wrong_chunks_and_fails_at_its_line() -> None:
    body = """
with MSCCLProgram("ag", fully_connected(2), AllGather(2, 1, False), 1):
    chunk(0, Buffer.input, 0).copy(0, Buffer.output, 0)
    chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0)
    Check()
"""
    err = compile_error(PRELUDE + body)
    assert err.pos is not None and (err.pos.line, err.pos.column) == (7, 5)
    assert err.message == (
        "Check() at line 7 failed: rank 0 output chunk 1 holds nothing instead of chunk(1,0); "
        "no copy or reduce wrote it (1 more output chunk is wrong)"
    )
    assert err.stdout == (
        "Rank 0 chunk 1 is incorrect: expected chunk(1,0), found empty\n"
        "Rank 1 chunk 1 is incorrect: expected chunk(1,0), found empty\n"
    )
    assert err.caret() == "        Check()\n        ^"


def test_check_returns_true() -> None:
    assert allgather2().stdout == ""
    out = prog(ALLGATHER2.format(extra="") + "    print(Check())\n").stdout
    assert out == "True\n"


def test_program_attributes() -> None:
    body = """
p = MSCCLProgram("named", ring(4), AllGather(4, 2, True), 3, protocol="LL",
                 threadblock_policy=ThreadblockPolicy.manual, instr_fusion=False)
print(p.name, p.num_ranks, p.instances, p.protocol, p.threadblock_policy, p.instr_fusion)
print(p.topo.num_nodes(), p.topo.link(0, 1), p.topo.link(0, 2), p.collective.chunk_factor)
with p as same:
    print(same is p, p.collective.name, p.collective.inplace)
    for r in range(4):
        c = chunk(r, Buffer.input, 0, size=2)
        for step in range(1, 4):
            c = c.copy((r + step) % 4, Buffer.output, r * 2)
    Check()
"""
    compiled = prog(body)
    assert compiled.stdout == (
        "named 4 3 LL ThreadblockPolicy.manual False\n4 1.0 0.0 2\nTrue allgather True\n"
    )
    assert compiled.options["instances"] == 3 and compiled.options["topology"] == "ring"


def test_topology_links_are_checked() -> None:
    body = """
with MSCCLProgram("x", line(3), AllGather(3, 1, True), 1):
    chunk(0, Buffer.input, 0).copy(2, Buffer.output, 0)
"""
    err = compile_error(PRELUDE + body)
    assert err.message == "no link from rank 0 to rank 2 in topology 'line'"
    assert (err.pos.line, err.pos.column) == (5, 5)  # type: ignore[union-attr]


def test_user_topology() -> None:
    body = """
links = [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
topo = Topology("chain", links)
print(topo.num_nodes(), topo.link(0, 1), topo.link(0, 2), topo.links == links)
with MSCCLProgram("x", topo, AllGather(3, 1, True), 1):
    chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0).copy(2, Buffer.output, 0)
    chunk(1, Buffer.input, 0).copy(0, Buffer.output, 1)
    chunk(1, Buffer.input, 0).copy(2, Buffer.output, 1)
    chunk(2, Buffer.input, 0).copy(1, Buffer.output, 2).copy(0, Buffer.output, 2)
    Check()
"""
    assert prog(body).stdout == "3 1 0 True\n"


CUSTOM = """
class Shift(Collective):
    def init_buffers(self):
        out = []
        for r in range(self.num_ranks):
            inputs = []
            for i in range(self.chunk_factor):
                inputs.append(Chunk(r, i, (r + 1) % self.num_ranks, i))
            out.append({Buffer.input: inputs, Buffer.output: [None] * self.chunk_factor})
        return out

    def check(self, prog):
        ok = True
        for r in range(self.num_ranks):
            for i, c in enumerate(prog.buffers[r][Buffer.output]):
                src = (r - 1) % self.num_ranks
                if c != Chunk(src, i, r, i):
                    print("Rank", r, "chunk", i, "is wrong:", c)
                    ok = False
        return ok

with MSCCLProgram("shift", fully_connected(3), Shift(3, 2, False), INSTANCES):
    for r in range(3):
        for i in range(2):
            chunk(r, Buffer.input, i).copy((r + 1) % 3, Buffer.output, i)
    print(Check())
"""


def test_custom_collective() -> None:
    compiled = prog(CUSTOM.replace("INSTANCES", "1"))
    assert compiled.stdout == "True\n"
    c = compiled.program.collective
    assert c.kind.value == "custom" and c.name == "custom"
    assert c.custom_input[0] == (((0, 1),), ((1, 1),))
    assert c.custom_output[1] == (((0, 1),), ((1, 1),))
    assert compiled.options["collective"] == "custom"
    text = format_program(compiled.program)
    assert "  pre 0:1 1:1\n  post 0:4 1:4\n" in text


def test_custom_collective_with_instances() -> None:
    compiled = prog(CUSTOM.replace("INSTANCES", "2"))
    c = compiled.program.collective
    # Interleaved: slot 0 of instance 1 is slot 1, slot 1 of instance 0 is slot 2.
    assert c.custom_input[0] == (((0, 1),), ((1, 1),), ((2, 1),), ((3, 1),))
    assert c.custom_output[1][:2] == (((0, 1),), ((1, 1),))


def test_custom_check_failure() -> None:
    body = CUSTOM.replace("INSTANCES", "1").replace(
        "(r + 1) % 3, Buffer.output", "r, Buffer.output"
    )
    err = compile_error(PRELUDE + body)
    assert err.message == "Check() failed: the custom collective's check() returned False"
    assert "Rank 0 chunk 0 is wrong: Chunk(origin_rank=0, origin_index=0" in err.stdout


def test_custom_postcondition_from_check_snapshot() -> None:
    body = """
class Keep(Collective):
    def init_buffers(self):
        return [
            {Buffer.input: [Chunk(0, 0)], Buffer.output: [None]},
            {Buffer.input: [Chunk(1, 0)], Buffer.output: [None]},
        ]
    def check(self, prog):
        return prog.buffers[1][Buffer.output][0] == Chunk(0, 0)

with MSCCLProgram("keep", fully_connected(2), Keep(2, 1, False), 1):
    chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0)
    Check()
"""
    c = prog(body).program.collective
    assert c.custom_output == ((None,), (((0, 1),),))


def test_custom_collective_that_does_not_deliver_fails_verification() -> None:
    body = CUSTOM.replace("INSTANCES", "1").replace("print(Check())", "pass")
    body = body.replace("for r in range(3):", "for r in range(1):")
    err = compile_error(PRELUDE + body)
    assert err.message == (
        "the compiled program does not verify: semantics: rank 0 output[0] ends with empty, "
        "expected chunk(2,0)"
    )
    assert err.pos is not None and err.pos.text.startswith("with MSCCLProgram(")


@pytest.fixture(autouse=True)
def _restore_emitter() -> Iterator[None]:
    """The CLI registers collc's XML writer when imported; each test starts without one and
    leaves the registration as it found it."""
    previous = hooks.xml_emitter()
    hooks.set_xml_emitter(None)
    try:
        yield
    finally:
        hooks.set_xml_emitter(previous)


def test_xml_hook() -> None:
    seen: list[CompiledProgram] = []

    def emitter(compiled: CompiledProgram) -> str:
        seen.append(compiled)
        return f'<algo name="{compiled.name}"/>'

    body = ALLGATHER2.format(extra="") + "    XML()\n"
    assert allgather2().xml_requested is False
    without = prog(body)
    assert without.xml_requested and without.stdout == ""
    hooks.set_xml_emitter(emitter)
    try:
        compiled = prog(body)
    finally:
        hooks.set_xml_emitter(None)
    assert compiled.stdout == '<algo name="ag"/>\n'
    assert len(seen) == 1 and seen[0].xml_requested and seen[0].program == compiled.program


def test_xml_emitter_errors_point_at_xml() -> None:
    def emitter(compiled: CompiledProgram) -> str:
        raise CollcError("cannot express this")

    hooks.set_xml_emitter(emitter)
    try:
        err = compile_error(PRELUDE + ALLGATHER2.format(extra="") + "    XML()\n")
    finally:
        hooks.set_xml_emitter(None)
    assert err.message == "XML(): cannot express this"
    assert err.pos is not None and err.pos.text == "    XML()"


@pytest.fixture
def no_emitter() -> Iterator[None]:
    hooks.set_xml_emitter(None)
    yield
    hooks.set_xml_emitter(None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("chunk(0, Buffer.input, 0)\n", "chunk() called outside a `with MSCCLProgram(...)` block"),
        ("Check()\n", "Check() called outside a `with MSCCLProgram(...)` block"),
        (
            'with MSCCLProgram("a", fully_connected(2), AllReduce(2, 1, True), 1):\n'
            '    with MSCCLProgram("b", fully_connected(2), AllReduce(2, 1, True), 1):\n'
            "        pass\n",
            "MSCCLProgram blocks cannot be nested",
        ),
        (
            'with MSCCLProgram("a", fully_connected(3), AllReduce(2, 1, True), 1):\n    pass\n',
            "the collective has 2 ranks but the topology has 3 nodes",
        ),
        (
            'with MSCCLProgram("a", fully_connected(2), AllReduce(2, 1, True), 1, "TCP"):\n'
            "    pass\n",
            "protocol must be one of Simple, LL, LL128, got 'TCP'",
        ),
        ("x = 1\n", "the program never runs a `with MSCCLProgram(...):` block"),
    ],
)
def test_program_misuse(body: str, message: str, no_emitter: None) -> None:
    err = compile_error(PRELUDE + body)
    assert err.message.startswith(message)


def test_several_programs_in_one_file() -> None:
    body = (
        'for n in ["a", "b"]:\n'
        "    with MSCCLProgram(n, fully_connected(2), AllGather(2, 1, True), 1):\n"
        "        for r in range(2):\n"
        "            chunk(r, Buffer.input, 0).copy(1 - r, Buffer.output, r)\n"
    )
    err = compile_error(PRELUDE + body)
    assert err.message.startswith("the file builds 2 MSCCLPrograms (1: a, 2: b); choose one")
    both = compile_all(PRELUDE + body, "t.py")
    assert [c.name for c in both] == ["a", "b"]
    assert compile_source(PRELUDE + body, "t.py", program="b").name == "b"
    assert compile_source(PRELUDE + body, "t.py", program=1).name == "a"
    assert compile_source(PRELUDE + body, "t.py", program="2").name == "b"
    with pytest.raises(CompileError, match=r"no MSCCLProgram 'c' in the file \(1: a, 2: b\)"):
        compile_source(PRELUDE + body, "t.py", program="c")
    with pytest.raises(CompileError, match="no MSCCLProgram 3"):
        compile_source(PRELUDE + body, "t.py", program=3)


def test_reduce_errors() -> None:
    double = """
    with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 1, True), 1):
        acc = chunk(1, Buffer.input, 0)
        acc.reduce(chunk(0, Buffer.input, 0))
        acc.reduce(chunk(0, Buffer.input, 0))
    """
    err = snippet_error(double)
    assert "would count a contribution twice" in err.message
    assert (err.pos.line, err.pos.column) == (6, 16)  # type: ignore[union-attr]
    none = """
    with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 1, False), 1):
        chunk(1, Buffer.input, 0).reduce(chunk(0, Buffer.output, 0))
    """
    err = snippet_error(none)
    assert err.message == (
        "reduce() needs a chunk reference, got NoneType (chunk() returns None for an empty slot)"
    )
    assert (err.pos.line, err.pos.column) == (4, 38)  # type: ignore[union-attr]


def test_run_helper_sees_trivial_program() -> None:
    assert run("x = 1").program.num_ops == 4
