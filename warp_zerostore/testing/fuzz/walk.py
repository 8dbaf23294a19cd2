"""Generic traversal of program nodes (frozen dataclasses and tuples of them): iterate, rebuild."""

from __future__ import annotations

import dataclasses


def children(node):
    """The direct child nodes of ``node`` (dataclass fields and tuple items that are nodes)."""
    if isinstance(node, tuple):
        for item in node:
            yield from _nodes_in(item)
        return
    for field in dataclasses.fields(node):
        yield from _nodes_in(getattr(node, field.name))


def _nodes_in(value):
    if dataclasses.is_dataclass(value):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _nodes_in(item)


def iter_nodes(node):
    """``node`` and every node under it, parents first."""
    yield node
    for child in children(node):
        yield from iter_nodes(child)


def rebuild(node, fn):
    """Rebuild bottom-up: every node is replaced by ``fn(node_with_rebuilt_children)``."""
    if isinstance(node, tuple):
        return tuple(rebuild(item, fn) for item in node)
    if not dataclasses.is_dataclass(node):
        return node
    changes = {}
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        if dataclasses.is_dataclass(value) or isinstance(value, tuple):
            changes[field.name] = rebuild(value, fn)
    return fn(dataclasses.replace(node, **changes) if changes else node)
