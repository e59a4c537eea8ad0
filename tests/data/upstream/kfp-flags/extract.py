#!/usr/bin/env python3
"""Writes <release>.json: the command-line flags KFP's driver and launcher define at a tag.

Usage: extract.py KFP_GIT_DIR RELEASE...   (KFP_GIT_DIR: a clone of kubeflow/pipelines with
its release tags; bare is fine). Reads, at each tag, every non-test .go file of
backend/src/v2/cmd/driver and backend/src/v2/cmd/launcher-v2 and collects the names given to
the standard `flag` package's definers (flag.String, flag.Bool, flag.Int, flag.Int64, ...,
and their ...Var forms), resolving names given as package constants.
"""
import json
import re
import subprocess
import sys

PACKAGES = {
    "driver": "backend/src/v2/cmd/driver",
    "launcher": "backend/src/v2/cmd/launcher-v2",
}
DEFINERS = (
    "Bool|BoolVar|Duration|DurationVar|Float64|Float64Var|Int|IntVar|Int64|Int64Var|"
    "String|StringVar|Uint|UintVar|Uint64|Uint64Var|Var|Func|BoolFunc|TextVar"
)
# flag.X(name, ...), or flag.XVar(&v, name, ...) and flag.Var(v, name, ...): the name is a
# string literal or a package constant.
CALL = re.compile(r"\bflag\.(" + DEFINERS + r")\(\s*([^,()]+?)\s*,\s*([^,]+?)\s*,")
CONST = re.compile(r"^\s*(\w+)\s*(?:string\s*)?=\s*(\"[^\"]*\")", re.M)


def git(git_dir, *args):
    return subprocess.run(
        ["git", "-C", git_dir, *args], check=True, capture_output=True, text=True
    ).stdout


def flags_of(git_dir, tag, path):
    files = [
        name
        for name in git(git_dir, "ls-tree", "--name-only", f"{tag}:{path}").split()
        if name.endswith(".go") and not name.endswith("_test.go")
    ]
    sources = {name: git(git_dir, "show", f"{tag}:{path}/{name}") for name in files}
    constants = {}
    for text in sources.values():
        for name, value in CONST.findall(text):
            constants[name] = json.loads(value)
    flags = {}
    for text in sources.values():
        for definer, first, second in CALL.findall(text):
            name = second if definer.endswith("Var") else first
            name = json.loads(name) if name.startswith('"') else constants[name]
            # What Go's flag parsing needs to know: a bool flag takes no separate value.
            kind = definer.removesuffix("Var").removesuffix("Func").lower() or "value"
            flags[name] = kind
    return dict(sorted(flags.items())), [f"{path}/{name}" for name in sorted(files)]


def main():
    git_dir, releases = sys.argv[1], sys.argv[2:]
    for release in releases:
        commit = git(git_dir, "rev-parse", f"{release}^{{commit}}").strip()
        out = {
            "release": release,
            "tag": release,
            "commit": commit,
            "note": "flags defined with Go's flag package in these sources, by name, with "
            "the definer's type (bool flags take no separate value); flags that imported "
            "libraries register (glog's v, logtostderr, ...) are not listed",
        }
        for binary, path in PACKAGES.items():
            flags, sources = flags_of(git_dir, release, path)
            out[binary] = {"sources": sources, "flags": flags}
        with open(f"{release}.json", "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
