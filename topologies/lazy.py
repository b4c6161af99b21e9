"""Lazy package exports: a package names what it offers and from which module, and imports
that module only when a name is first used (PEP 562), so ``import collc.cli`` and short
commands load no heavy library they do not need (tests/test_cli_startup.py)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, table: dict[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``name`` comes from module ``table[name]``
    and is then kept in ``namespace`` (the package's ``globals()``), so later uses are plain
    lookups. Other names raise AttributeError as usual."""

    def getattr_(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return getattr_
