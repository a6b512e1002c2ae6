// it_api.h compiles alone in C++: this translation unit includes nothing
// else. Linked into tests/header-cxx.
#include "it_api.h"

int header_cxx_it_api();

int header_cxx_it_api()
{
	it_event_t ev;

	ev.event_number = IT_SOFTWARE_EVENT;
	return ev.sw.event_number == IT_SOFTWARE_EVENT &&
	       sizeof(it_ia_info_t) > 0 ? 0 : 1;
}
