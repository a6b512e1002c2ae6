// Each installed header compiles alone in C++.
#include "rnicpi/rnicpi.h"

int main()
{
	return sizeof(struct rnicpi_device_ops) > 0 ? 0 : 1;
}
