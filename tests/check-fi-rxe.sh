#!/bin/sh
# SPDX-License-Identifier: MIT
# check-fi-rxe.sh - check-fi over soft-RoCE (rxe_lo), both ends in one
# process: soft-RoCE's UDP port belongs to one process at a time.
exec env CHECK_FI_DEVICE=rxe_lo "$(pwd)/tests/check-fi" "$@"
