// SPDX-License-Identifier: MIT
/*
 * mpi_onesided.c - one-sided communication between the ranks of a ring:
 * MPI_Put into the next rank's window and MPI_Get from it, in fence
 * epochs (active target) and under MPI_Win_lock (passive target), plus
 * MPI_Accumulate; every rank checks the bytes that landed in its window
 * and the bytes it fetched. Exits non-zero (MPI_Abort) on a mismatch.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN_BYTES 65536

static unsigned char pattern(int origin, int round, int i)
{
	return (unsigned char)((origin * 53 + round * 29 + i * 7 + 1) & 0xff);
}

static void fail(const char *what, int round, int i, int got, int want)
{
	fprintf(stderr, "mpi_onesided: %s: round %d, byte %d: %d, "
		"expected %d\n", what, round, i, got, want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	static const int sizes[] = { 8, 4096, WIN_BYTES };
	int rank, nranks, next, prev, s, i, round = 0;
	unsigned char *win_buf, *src, *dst;
	MPI_Win win;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	next = (rank + 1) % nranks;
	prev = (rank + nranks - 1) % nranks;
	src = malloc(WIN_BYTES);
	dst = malloc(WIN_BYTES);
	if (!src || !dst)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
			 &win_buf, &win);

	for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); s++) {
		int size = sizes[s];

		/* Active target: put into the next rank, fence, check. */
		round++;
		memset(win_buf, 0, WIN_BYTES);
		for (i = 0; i < size; i++)
			src[i] = pattern(rank, round, i);
		MPI_Win_fence(0, win);
		MPI_Put(src, size, MPI_BYTE, next, 0, size, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		for (i = 0; i < size; i++)
			if (win_buf[i] != pattern(prev, round, i))
				fail("MPI_Put (fence)", round, i, win_buf[i],
				     pattern(prev, round, i));
		for (i = size; i < WIN_BYTES; i++)
			if (win_buf[i] != 0)
				fail("MPI_Put wrote past its end", round, i,
				     win_buf[i], 0);

		/* Get back what this rank put into the next one. */
		memset(dst, 0, (unsigned int)size);
		MPI_Get(dst, size, MPI_BYTE, next, 0, size, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		for (i = 0; i < size; i++)
			if (dst[i] != pattern(rank, round, i))
				fail("MPI_Get (fence)", round, i, dst[i],
				     pattern(rank, round, i));

		/* Passive target: lock the next rank's window, put, get. */
		round++;
		MPI_Barrier(MPI_COMM_WORLD);
		for (i = 0; i < size; i++)
			src[i] = pattern(rank, round, i);
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win);
		MPI_Put(src, size, MPI_BYTE, next, 0, size, MPI_BYTE, win);
		MPI_Win_unlock(next, win);
		memset(dst, 0, (unsigned int)size);
		MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
		MPI_Get(dst, size, MPI_BYTE, next, 0, size, MPI_BYTE, win);
		MPI_Win_unlock(next, win);
		for (i = 0; i < size; i++)
			if (dst[i] != pattern(rank, round, i))
				fail("MPI_Get (lock)", round, i, dst[i],
				     pattern(rank, round, i));
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
		for (i = 0; i < size; i++)
			if (win_buf[i] != pattern(prev, round, i))
				fail("MPI_Put (lock)", round, i, win_buf[i],
				     pattern(prev, round, i));
		MPI_Win_unlock(rank, win);

		if (rank == 0)
			printf("mpi_onesided: %5d bytes: put/get in fence and "
			       "lock epochs checked\n", size);
	}

	/* MPI_Accumulate: every rank adds rank + 1 to each int of rank 0. */
	{
		int *acc = (int *)win_buf, one[256], want;

		MPI_Win_fence(0, win);
		memset(win_buf, 0, WIN_BYTES);
		MPI_Win_fence(0, win);
		for (i = 0; i < 256; i++)
			one[i] = (rank + 1) * (i + 1);
		MPI_Accumulate(one, 256, MPI_INT, 0, 0, 256, MPI_INT, MPI_SUM,
			       win);
		MPI_Win_fence(0, win);
		want = nranks * (nranks + 1) / 2;
		if (rank == 0)
			for (i = 0; i < 256; i++)
				if (acc[i] != want * (i + 1))
					fail("MPI_Accumulate", 0, i, acc[i],
					     want * (i + 1));
		if (rank == 0)
			printf("mpi_onesided: MPI_Accumulate (MPI_SUM) "
			       "checked\n");
	}

	MPI_Win_free(&win);
	free(src);
	free(dst);
	if (rank == 0)
		printf("mpi_onesided: OK\n");
	MPI_Finalize();
	return 0;
}
