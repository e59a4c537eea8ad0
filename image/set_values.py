"""Sets scalar values in a Helm values file, keeping its comments and layout.

    python3 image/set_values.py values.yaml a.b.c=VALUE ...

Each dotted key must already be in the file as `key: scalar` (two-space indentation, as the
chart's values.yaml is written); the value is written as a JSON string, which YAML reads as
the same string. A key that is not found is an error, so a renamed value cannot be skipped.
"""

import json
import re
import sys

KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_]+):(?P<rest>.*)$")


def set_values(text: str, assignments: dict[str, str]) -> str:
    lines = text.split("\n")
    path: list[tuple[int, str]] = []
    done = set()
    for number, line in enumerate(lines):
        match = KEY.match(line)
        if not match or line.lstrip().startswith("#"):
            continue
        indent = len(match["indent"])
        while path and path[-1][0] >= indent:
            path.pop()
        path.append((indent, match["key"]))
        dotted = ".".join(key for _, key in path)
        if dotted in assignments:
            value = json.dumps(assignments[dotted])
            lines[number] = f'{match["indent"]}{match["key"]}: {value}'
            done.add(dotted)
    missing = sorted(set(assignments) - done)
    if missing:
        raise SystemExit(f"set_values: no {', '.join(missing)} in the values file")
    return "\n".join(lines)


def main() -> None:
    path, *pairs = sys.argv[1:]
    assignments = dict(pair.split("=", 1) for pair in pairs)
    with open(path, encoding="utf-8") as file:
        text = file.read()
    with open(path, "w", encoding="utf-8") as file:
        file.write(set_values(text, assignments))


if __name__ == "__main__":
    main()
