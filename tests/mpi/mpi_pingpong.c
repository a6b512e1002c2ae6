// SPDX-License-Identifier: MIT
/*
 * mpi_pingpong.c - two ranks send messages of growing size back and
 * forth (MPI_Send/MPI_Recv), each side checking every byte it receives:
 * rank 0 sends a pattern, rank 1 answers with the pattern it received
 * transformed, so an echo of stale or misplaced data is caught.
 * Exits non-zero (MPI_Abort) on any mismatch.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(int size, int iter, int i, int reply)
{
	return (unsigned char)((i * 31 + size * 7 + iter * 13 + reply * 101) &
			       0xff);
}

static void fail(const char *what, int size, int iter, int i)
{
	fprintf(stderr, "mpi_pingpong: %s: %d bytes, iteration %d, byte %d\n",
		what, size, iter, i);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	static const int sizes[] = { 1, 8, 64, 1024, 4096, 16384, 65536,
				     262144, 1048576 };
	int rank, nranks, iters = 20;
	unsigned char *buf;
	int s, it, i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: needs 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(sizes[sizeof(sizes) / sizeof(sizes[0]) - 1]);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);

	for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); s++) {
		int size = sizes[s];
		double t0 = MPI_Wtime();

		for (it = 0; it < iters; it++) {
			MPI_Status st;
			int count;

			if (rank == 0) {
				for (i = 0; i < size; i++)
					buf[i] = pattern(size, it, i, 0);
				MPI_Send(buf, size, MPI_BYTE, 1, it,
					 MPI_COMM_WORLD);
				memset(buf, 0, (unsigned int)size);
				MPI_Recv(buf, size, MPI_BYTE, 1, it,
					 MPI_COMM_WORLD, &st);
				MPI_Get_count(&st, MPI_BYTE, &count);
				if (count != size)
					fail("short reply", size, it, count);
				for (i = 0; i < size; i++)
					if (buf[i] != pattern(size, it, i, 1))
						fail("reply differs", size, it,
						     i);
			} else {
				memset(buf, 0, (unsigned int)size);
				MPI_Recv(buf, size, MPI_BYTE, 0, it,
					 MPI_COMM_WORLD, &st);
				MPI_Get_count(&st, MPI_BYTE, &count);
				if (count != size || st.MPI_SOURCE != 0)
					fail("short message", size, it, count);
				for (i = 0; i < size; i++) {
					if (buf[i] != pattern(size, it, i, 0))
						fail("message differs", size,
						     it, i);
					buf[i] = pattern(size, it, i, 1);
				}
				MPI_Send(buf, size, MPI_BYTE, 0, it,
					 MPI_COMM_WORLD);
			}
		}
		if (rank == 0)
			printf("mpi_pingpong: %7d bytes x %d: %.1f us per "
			       "round trip, data checked\n", size, iters,
			       (MPI_Wtime() - t0) * 1e6 / iters);
	}
	free(buf);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_pingpong: OK\n");
	MPI_Finalize();
	return 0;
}
