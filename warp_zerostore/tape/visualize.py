"""The hazards a checking Tape found, drawn into Warp's own GraphViz picture of the Tape (``Tape.visualize()``).

Warp's ``Tape.visualize`` writes DOT with an ``arr<ptr>`` node per array and an HTML-table node per kernel whose
title cell is ``<b>key</b>`` (the same on warp-lang 1.9.1-1.19). This module appends statements to that DOT:
the arrays a hazard names turn red (orange for an overwrite that is safe), and each hazard gets a note node,
labelled with its kind and what it says, joined by red edges to the launches and arrays it names. Nothing of
Warp's drawing is removed, so a Tape without hazards draws exactly as Warp draws it.
"""

from __future__ import annotations

import re

from .. import _compat

# Colours: a real hazard, and an overwrite the later kernel's zeroing makes safe (kept for the record).
REAL = "#d62728"
SAFE = "#ff9f1c"
_KERNEL_NODE = re.compile(r"^\s*(\S+) \[label=<<TABLE[^\n]*\n[^\n]*<b>([^<]+)</b>", re.MULTILINE)


def mark_hazards(tape, dot: str, filename: str | None = None) -> str:
    """Append the marks of ``tape.hazards`` to ``dot`` (Warp's drawing of ``tape``); write it to ``filename``.

    Args:
        tape: The `warp_zerostore.Tape` whose hazards to draw (its launches are the ones Warp drew).
        dot: Warp's DOT source of the same Tape (`warp.Tape.visualize(None, ...)`).
        filename: Where to write the result; None writes nothing.

    Returns:
        The DOT source with the hazards marked (unchanged when ``tape.hazards`` is empty).
    """
    lines = hazard_lines(tape, dot)
    if lines:
        end = dot.rstrip().rfind("}")
        dot = dot[:end] + "\n".join(lines) + "\n" + dot[end:]
    if filename is not None:
        with open(filename, "w", encoding="utf-8") as f:
            f.write(dot)
    return dot


def hazard_lines(tape, dot: str) -> list:
    """The DOT statements that mark each hazard of ``tape`` on Warp's drawing ``dot``."""
    kernel_nodes: dict = {}
    for node, key in _KERNEL_NODE.findall(dot):
        kernel_nodes.setdefault(key, node)
    lines: list = []
    styled: dict = {}  # array node -> colour already given (red wins over orange)
    for number, hazard in enumerate(tape.hazards):
        colour = REAL if hazard.real else SAFE
        note = f"hazard{number}"
        kind = hazard.kind + ("" if hazard.real else " (safe)")
        lines.append(
            f'{note} [shape=note,style=filled,fillcolor="#fff0f0",color="{colour}",fontcolor="{colour}",'
            f'label="{_label([kind, *_summary(hazard)])}",tooltip="{_escape(hazard.message())}"];'
        )
        roles: dict = {}  # kernel node -> what the hazard says it did, in order
        arrays: dict = {}  # array node -> its label
        for role, site in (("writes", hazard.writer), ("reads", hazard.reader), ("wrote first", hazard.earlier)):
            if site is None:
                continue
            kernel = kernel_nodes.get(site.kernel)
            if kernel is not None:
                roles.setdefault(kernel, []).append(f"{role} (#{site.launch})")
            for name, array in _site_arrays(tape, site):
                arrays.setdefault(f"arr{array.ptr}", name)
        for kernel, said in roles.items():
            label = _escape(", ".join(said))
            lines.append(f'{note} -> {kernel} [color="{colour}",fontcolor="{colour}",label="{label}",penwidth=2];')
        for node, name in arrays.items():
            if styled.get(node) != REAL:
                lines.append(_array_style(node, name, colour, present=re.search(rf"\b{node} \[", dot) is not None))
                styled[node] = colour
            lines.append(f'{note} -> {node} [color="{colour}",style=dashed,arrowhead=none];')
    return lines


def _summary(hazard) -> list:
    """Short lines: who does what, to how many elements."""
    writer, other = hazard.writer, hazard.reader or hazard.earlier
    parts = []
    if writer is not None:
        parts.append(f"#{writer.launch} {writer.kernel} writes {writer.argument}")
    if other is not None and other is not writer:
        verb = "read" if hazard.reader is not None else "wrote"
        parts.append(f"#{other.launch} {other.kernel} {verb} {other.argument}")
    if hazard.elements:
        parts.append(f"{hazard.elements} element(s)")
    return parts


def _site_arrays(tape, site) -> list:
    """``[(label, array)]`` a site names: its argument labels in the recorded launch, each array once."""
    if site.launch >= len(tape.launches) or not site.argument:
        return []
    entry = tape.launches[site.launch]
    if not _compat.is_kernel_launch(entry):
        return []
    labels = site.argument.split(", ")
    arguments = dict(_compat.recorded_arguments(entry))
    found, seen = [], set()
    for label in labels:
        name, *path = label.split(".")  # "s.q": the array field q of the struct argument s
        value = arguments.get(name)
        if path and _compat.is_struct_instance(value):
            value = _compat.struct_field(value, tuple(path))
        if hasattr(value, "ptr") and value.ptr is not None and value.ptr not in seen:
            seen.add(value.ptr)
            found.append((label, value))
    return found


def _array_style(node: str, name: str, colour: str, present: bool) -> str:
    # Warp hides some arrays (hide_readonly_arrays=True): then the node is drawn here, with its name.
    label = "" if present else f'label="{_escape(name)}",shape=ellipse,'
    return f'{node} [{label}style=filled,fillcolor="{colour}",color="{colour}",penwidth=3];'


def _label(lines: list) -> str:
    return "\\n".join(_escape(line) for line in lines)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
