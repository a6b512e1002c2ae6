#!/bin/sh
# SPDX-License-Identifier: MIT
# check-fi-rxe.sh - check-fi over soft-RoCE (rxe_lo), both ends in one
# process: soft-RoCE's UDP port belongs to one process at a time.
# HOSTRDMA_KALD_SOCKET empty: never a host's hostrdma-kald.
exec env CHECK_FI_DEVICE=rxe_lo HOSTRDMA_KALD_SOCKET= "$(pwd)/tests/check-fi" "$@"
