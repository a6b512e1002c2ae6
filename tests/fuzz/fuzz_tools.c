/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tools: what hostrdma-ping and hostrdma-perf read from their peer
 * (tools/), with the checks they make before using it:
 *   0  rping's advert (ping_advert_take), and the text the server echoes
 *      (ping_echo_len) from a buffer of the advertised size;
 *   1  a hostrdma-perf control message (perf_ctl_check) carrying the
 *      client's PARAMS (perf_params_in), then the buffer adverts
 *      (perf_take_adverts, perf_adverts_ok);
 *   2  a DONE report combined with ours (perf_combine) and printed;
 *   3  a connection request's hello (perf_hello_ok);
 *   4  perftest's exchange (-R): its version string, cycle buffer,
 *      hand shake (perf_pt_dest_in) and report (perf_pt_report_in),
 *      printed.
 * Input: the selector byte, a byte of our own options, then the
 * message(s).
 */
#include "config.h"

#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tools/perf_priv.h"
#include "tools/ping_wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_stdio_quiet();
	return 0;
}

/* Up to @len bytes of the input into @out, the rest zero. */
static void take(struct fz_in *in, void *out, size_t len)
{
	size_t n;
	const uint8_t *p = fz_take(in, len, &n);

	memset(out, 0, len);
	memcpy(out, p, n);
}

static void rping(struct fz_in *in, uint8_t opt)
{
	struct ping_advert a;
	uint32_t max = 64 + (uint32_t)opt * 256, rkey, len;
	uint64_t addr;
	uint8_t *buf;

	take(in, &a, sizeof(a));
	if (ping_advert_take("fuzz", &a, max, &addr, &rkey, &len))
		return;
	FZ_CHECK(len >= 1 && len <= max);
	/* What the RDMA Read brought: the peer's bytes, then zeros. */
	buf = calloc(1, max);
	FZ_CHECK(buf);
	take(in, buf, len);
	buf[max - 1] = 0;
	FZ_CHECK(ping_echo_len(buf, max) <= max);
	free(buf);
}

static void perf_ctl(struct fz_in *in, uint8_t opt)
{
	struct perf_opts o = { 0 };
	struct perf_ctx c = { .o = &o, .server = true };
	struct perf_result r = { .size = 64, .iters = 1000, .ns = 123456 };

	take(in, &c.last, sizeof(c.last));
	if (perf_ctl_check(&c.last, (opt & 1) ? PERF_CTL_DONE
					      : PERF_CTL_PARAMS))
		return;
	if (opt & 1) {
		o.bidir = opt & 2;
		o.lat = opt & 4;
		o.json = opt & 8;
		c.server = opt & 16;
		perf_combine(&c, &r);
		perf_print_result(&o, &r);
		return;
	}
	if (perf_params_in(&c))
		return;
	FZ_CHECK(o.qps >= 1 && o.qps <= PERF_MAX_QPS);
	FZ_CHECK(c.max_size <= PERF_MAX_SIZE);
	c.nqp = o.qps;
	c.credit_off = c.max_size;
	perf_take_adverts(&c);
	(void)perf_adverts_ok(&c);
	perf_print_header(&o);
}

static void hello(struct fz_in *in, uint8_t opt)
{
	uint8_t pdata[IT_MAX_PRIV_DATA];

	take(in, pdata, sizeof(pdata));
	(void)perf_hello_ok(pdata, opt & 1, opt >> 1);
}

static void perftest(struct fz_in *in, uint8_t opt)
{
	struct perf_opts o = { .json = opt & 1 };
	struct perf_ctx c = { .o = &o, .server = true, .nqp = 1 };
	struct perf_result r = { 0 };
	char version[PT_VERSION_LEN];
	struct perf_pt_dest d;
	uint64_t report[5];
	uint32_t cycle_be, cycle;

	take(in, version, sizeof(version));
	if (perf_pt_version_ok(version))
		return;
	take(in, &cycle_be, sizeof(cycle_be));
	if (perf_pt_cycle(cycle_be, &cycle))
		return;
	FZ_CHECK(cycle >= PT_CYCLE_BUFFER && cycle <= (64u << 20));
	take(in, &d, sizeof(d));
	perf_pt_dest_in(&c, 0, &d);
	take(in, report, sizeof(report));
	perf_pt_report_in(report, &r);
	perf_print_result(&o, &r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	uint8_t sel = fz_u8(&in), opt = fz_u8(&in);

	switch (sel % 5) {
	case 0:
		rping(&in, opt);
		break;
	case 1:
	case 2:
		perf_ctl(&in, (uint8_t)((opt & ~1u) | (sel % 5 == 2)));
		break;
	case 3:
		hello(&in, opt);
		break;
	case 4:
		perftest(&in, opt);
		break;
	}
	return 0;
}
