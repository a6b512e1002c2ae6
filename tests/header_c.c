/* Each installed header compiles alone in C. */
#include "rnicpi/rnicpi.h"

int header_c_it_api(void);

int main(void)
{
	return sizeof(struct rnicpi_device_ops) > 0 ? header_c_it_api() : 1;
}
