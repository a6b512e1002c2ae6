/* it_api.h compiles alone in C: this translation unit includes nothing
 * else. Linked into tests/header-c. */
#include "it_api.h"

int header_c_it_api(void);

int header_c_it_api(void)
{
	it_event_t ev;

	ev.event_number = IT_SOFTWARE_EVENT;
	return ev.sw.event_number == IT_SOFTWARE_EVENT &&
	       sizeof(it_ia_info_t) > 0 ? 0 : 1;
}
