#!/usr/bin/env python3
"""Writes deny/advisory-db: the advisories `cargo deny check` reads (never fetched).

    python3 deny/refresh_advisories.py ADVISORY_DB_CHECKOUT DATE COMMIT

ADVISORY_DB_CHECKOUT is a copy of the RustSec advisory database (its `crates/` tree) as of
DATE (YYYY-MM-DD) and COMMIT. For every crate named in Cargo.lock, each of its advisories is
written as the facts cargo-deny acts on (id, package, date, aliases, categories,
informational kind, withdrawn, the patched and unaffected versions, affected OS and
architectures) with a title made from those facts; then the entries of
deny/advisories-since.toml (advisories published after DATE, with where each fact comes from)
are written the same way. Existing entries are replaced, none removed. DATE and COMMIT go to
deny/advisory-db/DATE, the crates looked up to deny/advisory-db/CRATES. Prints one line per phase and the counts.
"""

import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "deny" / "advisory-db"


def lock_crates():
    lock = tomllib.loads((ROOT / "Cargo.lock").read_text())
    return {package["name"] for package in lock["package"]}


def facts_of(path):
    """The TOML block of a RustSec advisory file."""
    text = path.read_text()
    match = re.search(r"```toml\n(.*?)```", text, re.S)
    if not match:
        raise SystemExit(f"{path}: no TOML block")
    return tomllib.loads(match.group(1))


def toml_list(values):
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def render(facts):
    """An advisory file holding only facts, in the layout cargo-deny parses."""
    advisory = facts["advisory"]
    versions = facts.get("versions", {})
    affected = facts.get("affected", {})
    lines = ["```toml", "[advisory]"]
    for field in ("id", "package", "date", "url", "informational", "cvss", "withdrawn"):
        if field in advisory:
            lines.append(f'{field} = "{advisory[field]}"')
    for field in ("aliases", "related", "categories"):
        if advisory.get(field):
            lines.append(f"{field} = {toml_list(advisory[field])}")
    lines.append("")
    lines.append("[versions]")
    lines.append(f"patched = {toml_list(versions.get('patched', []))}")
    if versions.get("unaffected"):
        lines.append(f"unaffected = {toml_list(versions['unaffected'])}")
    if affected.get("os") or affected.get("arch"):
        lines.append("")
        lines.append("[affected]")
        for field in ("os", "arch"):
            if affected.get(field):
                lines.append(f"{field} = {toml_list(affected[field])}")
    lines.append("```")
    kind = advisory.get("informational", "vulnerability")
    names = ", ".join(advisory.get("aliases", [])) or advisory["id"]
    url = advisory.get("url") or f"https://rustsec.org/advisories/{advisory['id']}"
    lines += ["", f"# {kind} in {advisory['package']} ({names})", "", f"See {url}.", ""]
    return "\n".join(lines)


def write(facts):
    advisory = facts["advisory"]
    path = OUT / "crates" / advisory["package"] / f"{advisory['id']}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(facts))


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    checkout, date, commit = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    crates = lock_crates()
    print(f"==> {len(crates)} crates in Cargo.lock")
    written = 0
    for crate in sorted(crates):
        for path in sorted((checkout / "crates" / crate).glob("*.md")):
            facts = facts_of(path)
            if facts["advisory"]["id"] == "RUSTSEC-0000-0000":
                continue
            write(facts)
            written += 1
    print(f"==> {written} advisories from the database of {date} ({commit})")
    since = tomllib.loads((ROOT / "deny" / "advisories-since.toml").read_text())
    for entry in since["advisory"]:
        facts = {
            "advisory": {k: v for k, v in entry.items() if k not in ("versions", "source")},
            "versions": entry["versions"],
        }
        write(facts)
    print(f"==> {len(since['advisory'])} advisories published since (deny/advisories-since.toml)")
    (OUT / "DATE").write_text(f"{date}\n{commit}\n")
    (OUT / "CRATES").write_text("".join(f"{crate}\n" for crate in sorted(crates)))


if __name__ == "__main__":
    main()
