# itapi/: IT-API v2.1, the application interface. it_api.h is installed as
# $(includedir)/it_api.h, its extensions (immediate data) as
# $(includedir)/hostrdma/it_ext.h; libhostrdma is itapi + cm + ual + kal
# (and the built-in providers) exporting those two headers' functions only.
include_HEADERS += it_api.h
pkginclude_HEADERS += it_ext.h

noinst_LTLIBRARIES += itapi/libitapi.la
itapi_libitapi_la_SOURCES = itapi/itapi_priv.h \
	itapi/itapi_status.c itapi/itapi_util.c itapi/itapi_ia.c \
	itapi/itapi_lmr.c itapi/itapi_rmr.c itapi/itapi_evq.c itapi/itapi_evd.c \
	itapi/itapi_ep.c itapi/itapi_srq.c \
	itapi/itapi_cm.c itapi/itapi_listen.c itapi/itapi_post.c itapi/itapi_ud.c
# The library is written against the 2.1 names (it_rmr_param_t.linked).
itapi_libitapi_la_CPPFLAGS = $(AM_CPPFLAGS) -DITAPI_ENABLE_V21_BINDINGS
itapi_libitapi_la_LIBADD = $(GLIB_LIBS) $(PTHREAD_LIBS)

lib_LTLIBRARIES += libhostrdma.la
libhostrdma_la_SOURCES =
# An empty C source list: make automake link with the C compiler.
nodist_EXTRA_libhostrdma_la_SOURCES = itapi/dummy.c
# ual/libual.la carries kal/libkal.la already (a convenience library).
libhostrdma_la_LIBADD = itapi/libitapi.la cm/libcm.la ual/libual.la \
	$(GLIB_LIBS) $(LIBNL_LIBS) $(PTHREAD_LIBS) $(LIBS)
libhostrdma_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/itapi/libhostrdma.map
EXTRA_libhostrdma_la_DEPENDENCIES = itapi/libhostrdma.map
# Providers configured as built-ins come in through ual/libual.la (each
# provider's local.mk adds itself there).
EXTRA_DIST += itapi/libhostrdma.map

# it_ext(3) and a link for each function of it_ext.h.
itapi_ext_pages = man/it_ext.3 man/hostrdma_ia_imm_data_size.3 \
	man/hostrdma_post_send_imm.3 man/hostrdma_post_sendto_imm.3 \
	man/hostrdma_post_rdma_write_imm.3 \
	man/hostrdma_event_imm_data.3
man_MANS += man/it_api.3 $(itapi_ext_pages)
EXTRA_DIST += man/it_api.3 $(itapi_ext_pages) docs/IT-API.md
# One page per IT-API function family (man/it_ep_connect.3, ...) and a
# `.so` link for each other function of the family; tests/check-install.sh
# fails when a function of it_api.h has none.
itapi_man_pages = man/it_address_handle_create.3 man/it_address_handle_free.3 \
	man/it_address_handle_modify.3 man/it_address_handle_query.3 \
	man/it_convert_net_addr.3 man/it_ep_accept.3 man/it_ep_connect.3 \
	man/it_ep_disconnect.3 man/it_ep_free.3 man/it_ep_modify.3 \
	man/it_ep_query.3 man/it_ep_rc_create.3 man/it_ep_reset.3 \
	man/it_ep_ud_create.3 man/it_evd_callback_attach.3 \
	man/it_evd_callback_detach.3 man/it_evd_create.3 man/it_evd_dequeue.3 \
	man/it_evd_dequeue_n.3 man/it_evd_free.3 man/it_evd_modify.3 \
	man/it_evd_post_se.3 man/it_evd_query.3 man/it_evd_wait.3 \
	man/it_get_consumer_context.3 man/it_get_handle_type.3 \
	man/it_get_pathinfo.3 man/it_handoff.3 man/it_hton64.3 \
	man/it_ia_create.3 man/it_ia_free.3 man/it_ia_info_free.3 \
	man/it_ia_query.3 man/it_interface_list.3 man/it_listen_create.3 \
	man/it_listen_free.3 man/it_listen_query.3 man/it_lmr_create.3 \
	man/it_lmr_create10.3 man/it_lmr_create20.3 man/it_lmr_create21.3 \
	man/it_lmr_create_unlinked.3 man/it_lmr_flush_to_mem.3 \
	man/it_lmr_free.3 man/it_lmr_link.3 man/it_lmr_modify.3 \
	man/it_lmr_query.3 man/it_lmr_refresh_from_mem.3 \
	man/it_lmr_sync_rdma_read.3 man/it_lmr_sync_rdma_write.3 \
	man/it_lmr_unlink.3 man/it_make_rdma_addr.3 \
	man/it_make_rdma_addr_absolute.3 man/it_make_rdma_addr_relative.3 \
	man/it_mem_map.3 man/it_mem_unmap.3 man/it_ntoh64.3 \
	man/it_post_atomic.3 man/it_post_rdma_read.3 \
	man/it_post_rdma_read_to_rmr.3 man/it_post_rdma_write.3 \
	man/it_post_recv.3 man/it_post_recvfrom.3 man/it_post_send.3 \
	man/it_post_send_and_unlink.3 man/it_post_sendto.3 man/it_pz_create.3 \
	man/it_pz_free.3 man/it_pz_query.3 man/it_reject.3 man/it_rmr_bind.3 \
	man/it_rmr_bind10.3 man/it_rmr_create.3 man/it_rmr_create10.3 \
	man/it_rmr_create20.3 man/it_rmr_free.3 man/it_rmr_link.3 \
	man/it_rmr_query.3 man/it_rmr_unbind.3 man/it_rmr_unlink.3 \
	man/it_set_consumer_context.3 man/it_socket_convert.3 \
	man/it_srq_create.3 man/it_srq_free.3 man/it_srq_modify.3 \
	man/it_srq_query.3 man/it_ud_service_reply.3 \
	man/it_ud_service_request.3 man/it_ud_service_request_handle_create.3 \
	man/it_ud_service_request_handle_free.3 \
	man/it_ud_service_request_handle_query.3
man_MANS += $(itapi_man_pages)
EXTRA_DIST += $(itapi_man_pages)

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = hostrdma.pc
EXTRA_DIST += hostrdma.pc.in
