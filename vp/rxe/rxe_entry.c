/* SPDX-License-Identifier: MIT */
/*
 * The provider's entry point, apart from the rest so that the tests can
 * link the provider code next to other providers without two
 * rnicpi_provider_entry symbols.
 */
#include "config.h"

#include "vp/rxe/rxe.h"

RNICPI_PROVIDER_DEFINE(rxe, &rxe_provider)
