#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""layers.py - the shape of the house, checked and drawn.

Reads every #include of every .c/.h in the source folders, maps each file
and each included header onto its layer (a folder: itapi, cm, ual, ...)
and compares the folder-to-folder arrows with two things kept in the tree:

  * LAYER_ARROWS below: the arrows docs/ARCHITECTURE.md allows. An include
    along an arrow that is not there fails, naming the file, the line and
    the header, unless that exact include is in tests/layers-allow.txt
    (known violations being removed; each entry says why).
  * docs/LAYERS.md: the picture, a Mermaid graph this script writes. The
    check fails when the code has an arrow the picture lacks, or the
    picture an arrow the code no longer has; then redraw it with
    `make layers-picture` (python3 tests/layers.py --write-picture).

Usage:
  layers.py [--srcdir DIR]                    check (exit 0 ok, 1 failed)
  layers.py [--srcdir DIR] --write-picture    rewrite docs/LAYERS.md
  layers.py [--srcdir DIR] --list             print the include arrows

tests/ and bench/ are exempt: a test may reach into any layer it tests.
"""

import argparse
import os
import re
import sys

# The layers, top to bottom, and what each may include besides itself.
# "api" is it_api.h, the public IT-API header at the top of the tree, and
# it_ext.h, hostrdma's extensions to it (installed as hostrdma/it_ext.h).
# A new provider folder vp/<name> gets the "vp/*" rule without an edit here.
LAYER_ARROWS = {
    "tools": {"api"},
    "examples": {"api"},
    "fi": {"api"},
    "api": set(),
    "itapi": {"api", "cm", "ual"},
    "cm": {"ual", "kal"},
    "ual": {"rnicpi", "kal"},
    "vp/*": {"rnicpi"},
    "rnicpi": set(),
    "kal": set(),
    # The daemon frames one RoCEv2 packet itself (a REJ, on QP1): it
    # links the provider's ICRC library, not the provider.
    "kald": {"kal", "vp/rxe"},
}

API_HEADERS = {"it_api.h", "it_ext.h"}

# Top-level folders that are not layers and are not read.
NOT_LAYERS = {"tests", "bench", "docs", "man", "m4", "build-aux",
              "autom4te.cache"}

# Headers made by configure, in the build tree: anyone may include them.
GENERATED = {"config.h"}

ALLOW_FILE = "tests/layers-allow.txt"
PICTURE_FILE = "docs/LAYERS.md"

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
EDGE_RE = re.compile(r'^\s*(\w+)\s*(-->|-\.->)\s*(\w+)\s*$')


def rule_for(layer):
    """The set of layers `layer` may include, or None if it has no rule."""
    if layer.startswith("vp/"):
        return LAYER_ARROWS["vp/*"]
    return LAYER_ARROWS.get(layer)


def layer_of(relpath):
    """The layer a file belongs to: its folder (vp/<name> for providers)."""
    parts = relpath.split("/")
    if len(parts) == 1:
        return "api" if parts[0] in API_HEADERS else None
    if parts[0] == "vp" and len(parts) >= 3:
        return "vp/" + parts[1]
    return parts[0]


def is_build_tree(path):
    return (os.path.exists(os.path.join(path, "config.status")) or
            os.path.exists(os.path.join(path, "Makefile")))


def source_files(top):
    """Every .c/.h of the layers, relative to top; and folders with C
    sources that belong to no layer (a new folder must be placed)."""
    files, unplaced = [], []
    for entry in sorted(os.listdir(top)):
        path = os.path.join(top, entry)
        # "_build", "_inst": make distcheck's trees inside the source.
        if entry.startswith((".", "_")) or entry in NOT_LAYERS:
            continue
        if os.path.isfile(path):
            if entry.endswith((".c", ".h")):
                files.append(entry)
            continue
        if not os.path.isdir(path) or is_build_tree(path):
            continue
        found = []
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and not is_build_tree(os.path.join(root, d)))
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    found.append(os.path.relpath(os.path.join(root, n), top))
        if not found:
            continue
        for f in found:
            layer = layer_of(f)
            if rule_for(layer) is None:
                unplaced.append(f)
            else:
                files.append(f)
    return files, unplaced


def resolve(top, including, name):
    """The in-tree header an #include names, relative to top, or None."""
    local = os.path.normpath(os.path.join(os.path.dirname(including), name))
    for cand in (local, os.path.normpath(name)):
        if not cand.startswith("..") and os.path.isfile(os.path.join(top, cand)):
            return cand
    return None


def read_includes(top, files):
    """(file, line number, included name, resolved path or None)."""
    out = []
    for f in files:
        with open(os.path.join(top, f), encoding="utf-8",
                  errors="replace") as fh:
            for no, line in enumerate(fh, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                quote, name = m.groups()
                target = resolve(top, f, name)
                if target is None and quote == '"' and name not in GENERATED:
                    target = ""  # a quoted include of ours that is missing
                out.append((f, no, name, target))
    return out


def read_allow(top):
    """Allowed violations: {(file, included name): reason}."""
    allow = {}
    path = os.path.join(top, ALLOW_FILE)
    if not os.path.exists(path):
        return allow
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                sys.exit(f"{ALLOW_FILE}:{no}: want 'FILE HEADER', got {line!r}")
            allow[(parts[0], parts[1])] = no
    return allow


def node_id(layer):
    return {"api": "api"}.get(layer, layer.replace("/", "_"))


def node_label(layer):
    return "it_api.h" if layer == "api" else layer + "/"


def draw(arrows, allowed_arrows):
    """docs/LAYERS.md's text for the set of arrows (pairs of layers)."""
    layers = sorted({a for a, _ in arrows} | {b for _, b in arrows},
                    key=lambda l: (list(LAYER_ARROWS).index(
                        "vp/*" if l.startswith("vp/") else l), l))
    out = [
        "# The layers as the includes draw them",
        "",
        "<!-- Written by tests/layers.py --write-picture (make",
        "     layers-picture) from the #include lines of the tree; `make",
        "     check` fails when the code and this picture differ. Do not",
        "     edit by hand. -->",
        "",
        "An arrow A --> B means some file of A includes a header of B.",
        "Dotted arrows are known violations listed in",
        "`tests/layers-allow.txt`, on their way out. The rules behind the",
        "picture are in [ARCHITECTURE.md](ARCHITECTURE.md).",
        "",
        "```mermaid",
        "flowchart TD",
    ]
    for l in layers:
        out.append(f'    {node_id(l)}["{node_label(l)}"]')
    for a, b in sorted(arrows):
        style = "-.->" if (a, b) in allowed_arrows else "-->"
        out.append(f"    {node_id(a)} {style} {node_id(b)}")
    out += ["```", "", "The same, as text:", "", "```"]
    for l in layers:
        targets = [node_label(b) + (" (allow-listed)"
                                    if (a, b) in allowed_arrows else "")
                   for a, b in sorted(arrows) if a == l]
        out.append(f"{node_label(l):10} -> {', '.join(targets) or '-'}")
    out += ["```", ""]
    return "\n".join(out)


def picture_arrows(text):
    ids = {}
    for m in re.finditer(r'^\s*(\w+)\["([^"]+)"\]\s*$', text, re.M):
        label = m.group(2)
        ids[m.group(1)] = "api" if label == "it_api.h" else label.rstrip("/")
    arrows = set()
    for line in text.splitlines():
        m = EDGE_RE.match(line)
        if m:
            arrows.add((ids.get(m.group(1), m.group(1)),
                        ids.get(m.group(3), m.group(3))))
    return arrows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--srcdir",
                    default=os.path.join(os.path.dirname(
                        os.path.abspath(__file__)), ".."))
    ap.add_argument("--write-picture", action="store_true")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    top = os.path.normpath(args.srcdir)

    problems = []
    files, unplaced = source_files(top)
    for f in unplaced:
        problems.append(f"{f}: folder '{layer_of(f)}' is no layer: give it "
                        f"a rule in LAYER_ARROWS (tests/layers.py) and a "
                        f"place in docs/ARCHITECTURE.md")

    allow = read_allow(top)
    used_allow = set()
    arrows, allowed_arrows = set(), set()
    for f, no, name, target in read_includes(top, files):
        if target == "":
            problems.append(f'{f}:{no}: #include "{name}": no such header '
                            f'in the tree')
            continue
        if not target:
            continue
        src, dst = layer_of(f), layer_of(target)
        if dst is None or src == dst:
            continue
        if args.list:
            print(f"{src} -> {dst}\t{f}:{no} {name}")
        arrows.add((src, dst))
        if dst in rule_for(src):
            continue
        if (f, name) in allow:
            used_allow.add((f, name))
            allowed_arrows.add((src, dst))
            continue
        allowed = ", ".join(sorted(rule_for(src))) or "nothing of ours"
        problems.append(f'{f}:{no}: #include "{name}": {src}/ may not '
                        f'include {dst}/ (it may include: {allowed}; see '
                        f'docs/ARCHITECTURE.md)')
    for key, no in sorted(allow.items()):
        if key not in used_allow:
            problems.append(f"{ALLOW_FILE}:{no}: '{key[0]} {key[1]}' is no "
                            f"longer a violation: delete the entry (and "
                            f"run make layers-picture)")
    # An allowed arrow drawn dotted must be only allowed includes.
    allowed_arrows = {a for a in allowed_arrows
                      if a[1] not in rule_for(a[0])}

    pic_path = os.path.join(top, PICTURE_FILE)
    if args.write_picture:
        with open(pic_path, "w", encoding="utf-8") as fh:
            fh.write(draw(arrows, allowed_arrows))
        print(f"wrote {PICTURE_FILE}: {len(arrows)} arrows")
    elif os.path.exists(pic_path):
        with open(pic_path, encoding="utf-8") as fh:
            drawn = picture_arrows(fh.read())
        for a, b in sorted(arrows - drawn):
            problems.append(f"{PICTURE_FILE}: the code has the arrow {a} -> "
                            f"{b} and the picture lacks it: make "
                            f"layers-picture")
        for a, b in sorted(drawn - arrows):
            problems.append(f"{PICTURE_FILE}: the picture has the arrow {a} "
                            f"-> {b} that the code no longer has: make "
                            f"layers-picture")
    else:
        problems.append(f"{PICTURE_FILE} is missing: make layers-picture")

    for p in problems:
        print("FAIL: " + p)
    if problems:
        print(f"layers: {len(problems)} problem(s) in {len(files)} files")
        return 1
    print(f"layers: {len(files)} files, {len(arrows)} arrows between "
          f"layers, all allowed and all in {PICTURE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
