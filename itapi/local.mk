# itapi/: IT-API v2.1, the application interface. it_api.h is installed as
# $(includedir)/it_api.h.
include_HEADERS += it_api.h
