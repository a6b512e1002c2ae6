// SPDX-License-Identifier: MIT
/*
 * mpi_allreduce.c - MPI_Allreduce (sum of integers, maximum of doubles)
 * and MPI_Bcast over every rank, with counts from one element to a few
 * hundred KiB; every rank checks every element of every result against
 * the value computed locally. Exits non-zero (MPI_Abort) on a mismatch.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void fail(const char *what, int count, int i, double got,
		 double want)
{
	fprintf(stderr, "mpi_allreduce: %s: count %d, element %d: %g, "
		"expected %g\n", what, count, i, got, want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	static const int counts[] = { 1, 7, 1000, 16384, 65536 };
	int rank, nranks, c, i, r;
	long long *in, *out;
	double *din, *dout;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	in = malloc(65536 * sizeof(*in));
	out = malloc(65536 * sizeof(*out));
	din = malloc(65536 * sizeof(*din));
	dout = malloc(65536 * sizeof(*dout));
	if (!in || !out || !din || !dout)
		MPI_Abort(MPI_COMM_WORLD, 2);

	for (c = 0; c < (int)(sizeof(counts) / sizeof(counts[0])); c++) {
		int count = counts[c];

		for (i = 0; i < count; i++) {
			in[i] = (long long)(rank + 1) * 1000003 + i;
			out[i] = -1;
			din[i] = (double)((rank * 7919 + i) % 1009);
			dout[i] = -1;
		}
		MPI_Allreduce(in, out, count, MPI_LONG_LONG, MPI_SUM,
			      MPI_COMM_WORLD);
		MPI_Allreduce(din, dout, count, MPI_DOUBLE, MPI_MAX,
			      MPI_COMM_WORLD);
		for (i = 0; i < count; i++) {
			long long sum = 0;
			double max = -1;

			for (r = 0; r < nranks; r++) {
				double d = (double)((r * 7919 + i) % 1009);

				sum += (long long)(r + 1) * 1000003 + i;
				if (d > max)
					max = d;
			}
			if (out[i] != sum)
				fail("MPI_SUM", count, i, (double)out[i],
				     (double)sum);
			if (dout[i] != max)
				fail("MPI_MAX", count, i, dout[i], max);
		}

		/* Broadcast from the last rank. */
		for (i = 0; i < count; i++)
			in[i] = rank == nranks - 1 ? 0x5a5a0000LL + i * 3 : 0;
		MPI_Bcast(in, count, MPI_LONG_LONG, nranks - 1,
			  MPI_COMM_WORLD);
		for (i = 0; i < count; i++)
			if (in[i] != 0x5a5a0000LL + i * 3)
				fail("MPI_Bcast", count, i, (double)in[i],
				     (double)(0x5a5a0000LL + i * 3));
		if (rank == 0)
			printf("mpi_allreduce: %d elements on %d ranks: sum, "
			       "max and broadcast checked\n", count, nranks);
	}
	free(in);
	free(out);
	free(din);
	free(dout);
	if (rank == 0)
		printf("mpi_allreduce: OK\n");
	MPI_Finalize();
	return 0;
}
