/* SPDX-License-Identifier: MIT */
/*
 * The provider's entry point, apart from the rest so that the tests can
 * link the provider code next to other providers.
 */
#include "config.h"

#include "vp/verbs/verbs.h"

RNICPI_PROVIDER_DEFINE(verbs, &verbs_provider)
