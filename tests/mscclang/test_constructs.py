"""One program of our own per construct of the MSCCLang Python subset (docs/mscclang.md, section 2).

Each snippet prints what it computes; the expected output is what CPython prints for the
same code (checked by `test_cpython_agrees` for the snippets that need no MSCCLang names).
"""

from __future__ import annotations

import contextlib
import io
from textwrap import dedent

import pytest

from mscclang_frontend import compile_source
from tests.mscclang.helpers import TRIVIAL, output, run

CASES: dict[str, tuple[str, str]] = {
    "imports": (
        """
        import argparse
        import math
        import msccl.language as ml
        from __future__ import annotations
        from math import log2
        from msccl.language.collectives import AllReduce, Collective
        from msccl.language.types import Buffer as B, ThreadblockPolicy
        print(log2(8), math.log2(16), ml.Buffer.input is B.input, AllReduce is not None)
        """,
        "3.0 4.0 True True\n",
    ),
    "def_defaults_return": (
        """
        def area(w, h=2, scale=1):
            return w * h * scale
        def nothing():
            return
        def pair(a, b):
            return a, b
        print(area(3), area(3, 4), area(3, scale=10), area(h=5, w=1), nothing(), pair(1, 2))
        """,
        "6 12 60 5 None (1, 2)\n",
    ),
    "nested_def_closure": (
        """
        def outer(n):
            base = 10 * n
            def inner(k):
                def innermost():
                    return base + k
                return innermost()
            return inner(1)
        print(outer(2))
        """,
        "21\n",
    ),
    "recursion": (
        """
        def fact(n):
            if n <= 1:
                return 1
            return n * fact(n - 1)
        print(fact(10))
        """,
        "3628800\n",
    ),
    "for_while_if_elif_else": (
        """
        out = []
        for i in range(10):
            if i % 2 == 0:
                continue
            elif i == 7:
                break
            else:
                out.append(i)
        n = 0
        while True:
            n += 1
            if n >= 3:
                break
        for x in []:
            pass
        else:
            out.append("for-else")
        while False:
            pass
        else:
            out.append("while-else")
        for y in range(3):
            if y == 1:
                break
        else:
            out.append("not reached")
        print(out, n)
        """,
        "[1, 3, 5, 'for-else', 'while-else'] 3\n",
    ),
    "assignment_unpacking": (
        """
        a = b = 3
        x, y = 1, 2
        x, y = y, x
        (p, q), r = (4, 5), 6
        [s, t] = "st"
        first, second = [10, 20]
        for i, (k, v) in enumerate([("a", 1), ("b", 2)]):
            print(i, k, v)
        print(a, b, x, y, p, q, r, s, t, first, second)
        """,
        "0 a 1\n1 b 2\n3 3 2 1 4 5 6 s t 10 20\n",
    ),
    "augmented_assignment": (
        """
        v = 7
        v += 3
        v -= 1
        v *= 4
        v //= 5
        v %= 5
        v **= 3
        v <<= 2
        v >>= 1
        v |= 1
        v &= 0xFF
        v ^= 0b101
        f = 1
        f /= 4
        lst = [1]
        alias = lst
        lst += [2, 3]
        d = {"k": 1}
        d["k"] += 41
        print(v, f, alias, d)
        """,
        "20 0.25 [1, 2, 3] {'k': 42}\n",
    ),
    "literals": (
        """
        print(42, -7, 0x1F, 0o17, 0b101, 1_000_000, 2.5, 1e3, True, False, None)
        print('single', "double", 'it\\'s', "tab\\tend", r"raw\\n", "a" "b" 'c')
        print('''triple
        quoted''', len(\"\"\"x\"\"\"))
        print("\\x41\\u00e9\\N{GREEK SMALL LETTER ALPHA}", "\\101")
        """,
        "42 -7 31 15 5 1000000 2.5 1000.0 True False None\n"
        "single double it's tab\tend raw\\n abc\n"
        "triple\nquoted 1\n"
        "A\u00e9\u03b1 A\n",
    ),
    "fstrings": (
        """
        n = 3
        name = "ring"
        d = {"k": [1, 2]}
        print(f"s{n}->{n + 1}", f'{name!r}', f"{n:03d}|{n:>4}|{2.5:.2f}", f"{n=}", f"{{}}{d['k'][1]}")
        print(f"{'nested'}" f"{n * 2}" "plain", F"{name.upper()}", rf"\\{n}")
        """,
        "s3->4 'ring' 003|   3|2.50 n=3 {}2\nnested6plain RING \\3\n",
    ),
    "arithmetic": (
        """
        print(7 + 2, 7 - 2, 7 * 2, 7 // 2, 7 % 2, 7 ** 2, 7 / 2, -7 // 2, -7 % 3)
        print(-3, +3, ~3, -2 ** 2, (-2) ** 2, 2 ** -1, 1 + 2 * 3 - 4 // 2)
        print(6 & 3, 6 | 3, 6 ^ 3, 1 << 4, 256 >> 2, 2 ** 3 ** 2)
        print("ab" * 3, [0] * 3, [None] * 2 + [1], (1,) * 2, "x" + "y")
        """,
        "9 5 14 3 1 49 3.5 -4 2\n-3 3 -4 -4 4 0.5 5\n2 7 5 16 64 512\n"
        "ababab [0, 0, 0] [None, None, 1] (1, 1) xy\n",
    ),
    "comparisons": (
        """
        a = None
        print(1 < 2, 2 <= 2, 3 > 4, 3 >= 4, 1 == 1, 1 != 1, 1 < 2 < 3, 3 > 2 > 2)
        print(a is None, a is not None, 2 in [1, 2], 5 not in (1, 2), "b" in "abc", "k" in {"k": 1})
        """,
        "True True False False True False True False\nTrue False True True True True\n",
    ),
    "boolean_and_conditional": (
        """
        def loud(x):
            print("eval", x)
            return x
        print(loud(0) and loud(1), loud(2) or loud(3), not 0, not [1])
        print("even" if 4 % 2 == 0 else "odd", 1 if False else 2 if False else 3)
        """,
        "eval 0\neval 2\n0 2 True False\neven 3\n",
    ),
    "lists_tuples_dicts": (
        """
        lst = [3, 1, 2]
        lst.append(4)
        lst[0] = 30
        t = (1, "two", [3])
        d = {"a": 1, 2: "b", (1, 2): "tuple key"}
        d["c"] = 3
        print(lst, lst[-1], lst[1:3], lst[::2], lst[::-1], len(lst), t[1], t[2][0])
        print(d["a"], d[2], d[1, 2], len(d), sorted(lst), list(d.keys())[:2])
        for k, v in d.items():
            print(k, v)
        print([[1, 2], [3]][1], [], (), {}, [1, 2,], (5,))
        """,
        "[30, 1, 2, 4] 4 [1, 2] [30, 2] [4, 2, 1, 30] 4 two 3\n"
        "1 b tuple key 4 [1, 2, 4, 30] ['a', 2]\n"
        "a 1\n2 b\n(1, 2) tuple key\nc 3\n"
        "[3] [] () {} [1, 2] (5,)\n",
    ),
    "builtins": (
        """
        import math
        print(len("abc"), list(range(3)), list(range(-2, 2)), list(range(10, 0, -3)))
        print(list(enumerate("ab")), list(enumerate("ab", 1)), min(3, 1, 2), max([4, 9, 2]))
        print(abs(-5), int("12") + int(3.9), str(5) + "!", int(math.log2(64)), sum([1, 2, 3]))
        print(min([5, 3], key=abs), max("a", "bb", key=len), round(2.567, 2), divmod(7, 2))
        print(list(zip([1, 2], "ab")), any([0, 1]), all([]), sorted([3, 1], reverse=True))
        print(list(reversed([1, 2])), tuple([1]), dict([(1, 2)]), float("1.5"), bool(0))
        print(isinstance(3, int), isinstance("s", (int, list)), repr("q"), math.ceil(2.1), math.floor(2.9))
        """,
        "3 [0, 1, 2] [-2, -1, 0, 1] [10, 7, 4, 1]\n"
        "[(0, 'a'), (1, 'b')] [(1, 'a'), (2, 'b')] 1 9\n"
        "5 15 5! 6 6\n"
        "3 bb 2.57 (3, 1)\n"
        "[(1, 'a'), (2, 'b')] True True [3, 1]\n"
        "[2, 1] (1,) {1: 2} 1.5 False\n"
        "True False 'q' 3 2\n",
    ),
    "methods_on_call_results": (
        """
        def words():
            return "a,b,c"
        print(words().split(",")[1].upper(), "-".join(["x", "y"]).replace("-", "+"))
        print("{}-{name}".format(1, name="n"), "abc".startswith("a"), " pad ".strip())
        """,
        "B x+y\n1-n True pad\n",
    ),
    "keyword_arguments": (
        """
        def f(a, b=0, c=0):
            return a * 100 + b * 10 + c
        print(f(1, c=3), f(c=1, a=2, b=3), f(a=4), sorted([2, 1], reverse=False))
        print("x", "y", sep="-", end="!\\n")
        """,
        "103 231 400 [1, 2]\nx-y!\n",
    ),
    "assert": (
        """
        assert 1 + 1 == 2
        assert True, "never shown"
        print("asserts passed")
        """,
        "asserts passed\n",
    ),
    "print": (
        """
        print()
        print("a", 1, None, [1, "b"], (2,), {"k": None})
        print("no newline", end="")
        print(" joined", sep="|")
        """,
        "\na 1 None [1, 'b'] (2,) {'k': None}\nno newline joined\n",
    ),
    "classes": (
        """
        class Base:
            kind = "base"
            def __init__(self, n):
                self.n = n
            def describe(self):
                return f"{self.kind}:{self.n}"
        class Child(Base):
            kind = "child"
            def __init__(self, n, extra):
                super().__init__(n)
                self.extra = extra
            def describe(self):
                return super().describe() + f"+{self.extra}"
        c = Child(1, "x")
        c.n += 1
        print(c.describe(), Base(5).describe(), Child.kind, isinstance(c, Base))
        """,
        "child:2+x base:5 child True\n",
    ),
    "lexing": (
        "# a comment line\n"
        "values = [1,  # a comment inside brackets\n"
        "          2,\n"
        "    3]\n"
        "   \n"
        "\t\n"
        "total = (values[0] +\n"
        "         values[1]) + \\\n"
        "    values[2]\n"
        "x = 1; y = 2;\n"
        "if total:    # trailing spaces and comments   \n"
        "    print(total, x + y)   \n",
        "6 3\n",
    ),
    "main_guard": (
        """
        def main():
            print("main ran", __name__)
        if __name__ == '__main__':
            main()
        """,
        "main ran __main__\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_construct(name: str) -> None:
    snippet, expected = CASES[name]
    assert output(snippet) == expected


_MSCCL_FREE = {k for k in CASES if k not in ("imports",)}


@pytest.mark.parametrize("name", sorted(_MSCCL_FREE))
def test_cpython_agrees(name: str) -> None:
    """The expected outputs are what Python itself prints for the same snippets."""
    snippet, expected = CASES[name]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(dedent(snippet), name, "exec"), {"__name__": "__main__"})
    assert buf.getvalue() == expected


def test_no_final_newline_and_crlf() -> None:
    text = "from msccl.language import *\r\nfrom msccl.topologies import *\r\n" + TRIVIAL.replace(
        "\n", "\r\n"
    ).rstrip("\r\n")
    text += "\r\nprint('done')"
    assert compile_source(text, "t.py").stdout == "done\n"


ARGPARSE_PROGRAM = """
import argparse
parser = argparse.ArgumentParser(description="sizes")
parser.add_argument('num_gpus', type=int, help='number of gpus')
parser.add_argument('instances', type=int, nargs='?', default=1)
parser.add_argument('--protocol', type=str, default='Simple', choices=['Simple', 'LL', 'LL128'])
parser.add_argument('--chunks', type=int, default='2', help='a string default is converted')
parser.add_argument('-v', '--verbose', action='store_true')
parser.add_argument('--name')
args = parser.parse_args()
print(args.num_gpus, args.instances, args.protocol, args.chunks, args.verbose, args.name)
"""


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["8"], "8 1 Simple 2 False None\n"),
        (["8", "4", "--protocol", "LL"], "8 4 LL 2 False None\n"),
        (["--protocol=LL128", "16", "-v", "--chunks", "3"], "16 1 LL128 3 True None\n"),
        (["2", "--name", "x y", "--", "3"], "2 3 Simple 2 False x y\n"),
        (["2", "--verb"], "2 1 Simple 2 True None\n"),
    ],
)
def test_argparse_pattern(argv: list[str], expected: str) -> None:
    assert run(ARGPARSE_PROGRAM, argv).stdout == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: num_gpus"),
        (["x"], "argument num_gpus: invalid int value: 'x'"),
        (["4", "--protocol", "TCP"], "invalid choice: 'TCP'"),
        (["4", "5", "6"], "unrecognized arguments: 6"),
        (["4", "--bogus"], "unrecognized arguments: --bogus"),
        (["4", "--protocol"], "argument --protocol: expected one argument"),
    ],
)
def test_argparse_errors(argv: list[str], message: str) -> None:
    from tests.mscclang.helpers import snippet_error

    err = snippet_error(ARGPARSE_PROGRAM, argv)
    assert message in err.message
    assert err.message.startswith("program arguments: ")
    assert err.pos is not None and err.pos.text.strip() == "args = parser.parse_args()"


def test_argparse_help_is_reported() -> None:
    from tests.mscclang.helpers import snippet_error

    err = snippet_error(ARGPARSE_PROGRAM, ["-h"])
    assert "usage: program [-h] num_gpus [instances]" in err.message
    assert "number of gpus" in err.message
