#!/usr/bin/env python3
"""The map is the code: checks include/tutti/ against the layer order docs/layers.md states.

1. A header includes tutti headers only from its own folder or from a lower floor.
2. No header befriends a class other than one it defines itself (other instantiations of the same
   template) or one in its layer's `detail::` (a CRTP base): a friend class reaches
   into private members past every interface, which is how a cycle between layers hides from the
   include graph. Friend functions (a defaulted operator==) are fine.
3. No header is over 450 lines unless it is listed in LONG_ALLOWED with the reason it is one concern.

Usage: layers.py INCLUDE_DIR    (exits 1 and prints every violation)
"""
import pathlib
import re
import sys

# Folder (or top-level header stem) -> floor. Same floor, different folder: neither includes the other.
FLOORS = {
    "core": 1,
    "codec": 2, "bootstrap": 2, "tuner": 2,  # tuner/: tuning values and their provenance, plain data
    "cuda": 3,
    "transport": 4,
    "algorithm": 5,
    "fusion": 6,
    "communicator": 7,
    "trainer": 8,
    "testing": 9,
    "tutti": 10, "version": 0,  # the umbrella header sees everything; version.hpp sees nothing
}
MAX_LINES = 450
# header -> why it is one concern although long (reviewed; keep this list short)
LONG_ALLOWED = {
    "tuner/default_table.hpp": "generated from tuning/default.json (tools/embed-default-table.sh): one table of data, its length the tuned machine's",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"tutti/([^"]+)"', re.M)
FRIEND = re.compile(r'^[^/\n]*\bfriend\b([^;{(]*)[;{]', re.M)  # a friend declaration with no '(': a class


def layer_of(relative: str) -> str:
    """'algorithm/ring.hpp' -> 'algorithm'; 'communicator.hpp' -> 'communicator'."""
    head = relative.split("/", 1)[0]
    return head.split(".", 1)[0]


def main() -> int:
    root = pathlib.Path(sys.argv[1]) / "tutti"
    problems = []
    headers = sorted(p for p in root.rglob("*") if p.suffix in (".hpp", ".cuh", ".h"))
    if len(headers) < 50:
        problems.append(f"only {len(headers)} headers under {root}: wrong directory?")
    for path in headers:
        rel = path.relative_to(root).as_posix()
        mine = layer_of(rel)
        if mine not in FLOORS:
            problems.append(f"{rel}: folder '{mine}' has no floor in tests/packaging/layers.py (and docs/layers.md)")
            continue
        text = path.read_text()
        for target in INCLUDE.findall(text):
            theirs = layer_of(target)
            if theirs not in FLOORS:
                problems.append(f"{rel}: includes tutti/{target}, whose folder has no floor")
            elif theirs != mine and FLOORS[theirs] >= FLOORS[mine]:
                problems.append(f"{rel} (floor {FLOORS[mine]}, {mine}) includes tutti/{target} "
                                f"(floor {FLOORS[theirs]}, {theirs}): a layer includes only lower floors")
        for name in FRIEND.findall(text):
            target = re.sub(r"^\s*(class|struct)\s+", "", name).strip()
            if target.startswith("detail::"):
                continue  # the layer's own implementation detail
            if re.search(r"\b(class|struct)\s+" + re.escape(target.split("<")[0]) + r"\b[^;]*\{", text):
                continue  # a class this header defines (e.g. context<T, C> befriending context<G, S>)
            problems.append(f"{rel}: 'friend {name.strip()}': give the other side an interface instead")
        lines = text.count("\n")
        if lines > MAX_LINES and rel not in LONG_ALLOWED:
            problems.append(f"{rel}: {lines} lines (> {MAX_LINES}): split it by concern, or list it in "
                            "LONG_ALLOWED with the reason it is one")
    for p in problems:
        print(p)
    print(f"layers: {len(headers)} headers, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
