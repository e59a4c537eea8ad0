#!/usr/bin/env python3
"""Fails when modules of a crate import each other in a circle.

For every `use` and every inline `crate::`/`super::`/`self::` path in a crate's `src/`, the
importing file and the imported module are projected onto their nearest common parent: the
two children of that parent containing them are an edge (a child using its own ancestors'
items is not an edge; that is how Rust modules share types). A strongly connected set of two
or more siblings is a circle, printed with one import per edge that makes it.

Usage: module_cycles.py CRATE_SRC_DIR...   (exit 1 when a circle is found)
"""

import re
import sys
from collections import defaultdict
from pathlib import Path

USE = re.compile(r"\buse\s+([^;]+);", re.S)
INLINE = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def module_of(src: Path, file: Path) -> tuple:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def expand(tree: str) -> list:
    """`a::{b, c::{d}}` -> ['a::b', 'a::c::d']."""
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
    if start is None:
        return [tree]
    prefix, inner = tree[:start], tree[start + 1 : tree.rindex("}")]
    items, depth, current = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        current += ch
    items.append(current)
    return [p for item in items if item for p in expand(prefix + item)]


def resolve(path: str, here: tuple, modules: set) -> tuple | None:
    segments = path.split("::")
    if segments[0] == "crate":
        base, rest = (), segments[1:]
    elif segments[0] in ("super", "self"):
        base = list(here)
        while segments and segments[0] in ("super", "self"):
            if segments.pop(0) == "super":
                base = base[:-1]
        base, rest = tuple(base), segments
    else:
        return None
    target = base
    for segment in rest:
        if target + (segment,) in modules:
            target = target + (segment,)
        else:
            break
    return target


def check(src: Path) -> list:
    files = sorted(src.rglob("*.rs"))
    modules = {module_of(src, f) for f in files}
    # (parent, from_child, to_child) -> an example import
    edges = {}
    for file in files:
        here = module_of(src, file)
        text = STRING.sub('""', COMMENT.sub("", file.read_text()))
        # Test modules see everything; they are not part of the structure.
        text = re.split(r"#\[cfg\(test\)\]\s*mod\s+tests\s*\{", text)[0]
        paths = [p for tree in USE.findall(text) for p in expand(tree)]
        paths += INLINE.findall(text)
        for path in paths:
            target = resolve(path.rstrip(":*"), here, modules)
            if target is None:
                continue
            common = 0
            while common < min(len(here), len(target)) and here[common] == target[common]:
                common += 1
            if common == len(here) or common == len(target):
                continue  # the same module, an ancestor or a descendant
            parent = here[:common]
            edge = (parent, here[common], target[common])
            edges.setdefault(edge, f"{file.relative_to(src)}: {path}")
    graph = defaultdict(set)
    for parent, a, b in edges:
        graph[(parent, a)].add((parent, b))
    return [(cycle, edges) for cycle in strongly_connected(graph) if len(cycle) > 1]


def strongly_connected(graph) -> list:
    index, low, stack, on_stack, result, counter = {}, {}, [], set(), [], [0]
    nodes = set(graph) | {n for targets in graph.values() for n in targets}

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            result.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return result


def main() -> int:
    found = 0
    for arg in sys.argv[1:]:
        src = Path(arg)
        for cycle, edges in check(src):
            found += 1
            parent = "::".join(cycle[0][0]) or "crate"
            names = [name for _, name in cycle]
            print(f"{src}: circle in {parent}: {' <-> '.join(names)}")
            for (p, a, b), example in sorted(edges.items()):
                if p == cycle[0][0] and a in names and b in names:
                    print(f"    {a} -> {b}  ({example})")
    if found == 0:
        print(f"module circles: none in {', '.join(sys.argv[1:])}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
