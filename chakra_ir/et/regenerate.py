"""Regenerate the committed Python bindings of ``et_def.proto``.

Run from anywhere: ``python -m chakra_ir.et.regenerate`` rewrites ``et_def_pb2.py`` and
``et_def_pb2.pyi`` beside this file; ``python -m chakra_ir.et.regenerate DIR`` writes them into
DIR instead (the test that checks the committed bindings are current does that). It needs
``grpcio-tools`` (the ``test`` extra), whose bundled ``protoc`` makes the output independent
of any system protoc.

The .proto is compiled under its repository path, so the descriptor pool knows it as
``chakra_ir/et/et_def.proto``: upstream Chakra's bindings register ``et_def.proto`` under
package ``ChakraProtoMsg``, and both can be imported in one process.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROTO = HERE / "et_def.proto"
GENERATED = ("et_def_pb2.py", "et_def_pb2.pyi")


def regenerate(out_dir: Path | None = None) -> list[Path]:
    """Run protoc on ``et_def.proto``; return the written files (``GENERATED`` in ``out_dir``).

    Raises RuntimeError when protoc fails.
    """
    target = HERE if out_dir is None else Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            f"--proto_path={ROOT}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            str(PROTO.relative_to(ROOT)),
        ]
        # protoc runs in a child process: grpc_tools' bundled protobuf and ortools' cannot share
        # one process (loading both aborts it), and the tests load ortools.
        done = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", *args], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"protoc failed with status {done.returncode}: {' '.join(args)}\n{done.stderr}"
            )
        made = Path(tmp) / PROTO.parent.relative_to(ROOT)
        out = []
        for name in GENERATED:
            dest = target / name
            shutil.copyfile(made / name, dest)
            out.append(dest)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: ``[DIR]``; prints the written files."""
    args = sys.argv[1:] if argv is None else argv
    for path in regenerate(Path(args[0]) if args else None):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
