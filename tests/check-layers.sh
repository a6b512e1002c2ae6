#!/bin/sh
# SPDX-License-Identifier: MIT
# check-layers.sh - run by `make check`: no file includes a header of a layer
# it may not reach, and docs/LAYERS.md draws exactly the arrows the
# includes make (tests/layers.py, docs/ARCHITECTURE.md).
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null 2>&1 ||
	{ echo "SKIP: check-layers: python3 is not installed"; exit 77; }
exec python3 "$here/layers.py" --srcdir "$here/.."
