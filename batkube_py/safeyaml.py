"""YAML from users' files, loaded with bounds: a file of a few kilobytes cannot expand into billions of
nodes through aliases (a "billion laughs"), nor nest deeply enough to exhaust the interpreter's stack."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

MAX_ALIASES = 1000  # experiment and scheduler files use a handful, if any
MAX_DEPTH = 64
MAX_EXPANDED = 1_000_000  # nodes of the document once every alias is expanded


class YamlError(ValueError):
    """A file that is not bounded, readable, UTF-8 YAML; the message names the file."""


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: str):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent, index):  # noqa: ANN001 (PyYAML's signature)
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_ALIASES} aliases (*name)")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.YAMLError(f"nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many nodes the document has with its aliases expanded (shared nodes counted once each)."""
    if id(node) in memo:
        return memo[id(node)]
    n = 1
    if isinstance(node, yaml.SequenceNode):
        n += sum(_expanded(x, memo) for x in node.value)
    elif isinstance(node, yaml.MappingNode):
        n += sum(_expanded(k, memo) + _expanded(v, memo) for k, v in node.value)
    memo[id(node)] = n
    return n


@contextmanager
def _bounded(text: str, where: str) -> Iterator[_BoundedLoader]:
    loader = _BoundedLoader(text)
    try:
        yield loader
    except yaml.YAMLError as exc:
        raise YamlError(f"{where}: not valid YAML: {' '.join(str(exc).split())[:300]}") from None
    except RecursionError:
        raise YamlError(f"{where}: nested too deeply") from None
    finally:
        loader.dispose()


def _document(loader: _BoundedLoader, node: yaml.Node) -> Any:
    if _expanded(node, {}) > MAX_EXPANDED:
        raise yaml.YAMLError(f"its aliases expand to more than {MAX_EXPANDED:,} values")
    return loader.construct_document(node)


def load_text(text: str, where: str) -> Any:
    with _bounded(text, where) as loader:
        node = loader.get_single_node()
        return None if node is None else _document(loader, node)


def load_all_text(text: str, where: str) -> list[Any]:
    """Every document of a multi-document stream (`---`), each bounded as load_text bounds one."""
    with _bounded(text, where) as loader:
        docs = []
        while loader.check_node():
            docs.append(_document(loader, loader.get_node()))
        return docs


def read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise YamlError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return text


def load_file(path: Path) -> Any:
    return load_text(read_text(path), str(path))
