/* SPDX-License-Identifier: MIT */
/*
 * The provider's entry point, apart from the rest so that the module and
 * the builtin library wrap one convenience library (the one the tests
 * link) and the code is compiled once.
 */
#include "config.h"

#include "vp/siw/siw.h"

RNICPI_PROVIDER_DEFINE(siw, &siw_provider)
