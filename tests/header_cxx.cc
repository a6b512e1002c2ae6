// Each installed header compiles alone in C++.
#include "rnicpi/rnicpi.h"

int header_cxx_it_api();

int main()
{
	return sizeof(struct rnicpi_device_ops) > 0 ? header_cxx_it_api() : 1;
}
