# tests/check-install: make install into a DESTDIR under /tmp, then build a
# program against it with pkg-config, shared and static, and check the
# provider directory, the installed docs and one man page per IT-API
# function (tests/check-install.sh).
check_SCRIPTS = tests/check-install
TESTS += tests/check-install
CLEANFILES += tests/check-install
EXTRA_DIST += tests/check-install.sh

tests/check-install: tests/check-install.sh Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && { \
	echo '#!/bin/sh'; \
	echo "CC='$(CC)' PKG_CONFIG='$(PKG_CONFIG)' MAKE='$(MAKE)'"; \
	echo "PROVIDER_LAS='$(providers_LTLIBRARIES)'"; \
	echo "CORE_LIBADD='$(libhostrdma_la_LIBADD)'"; \
	echo "srcdir='$(abs_srcdir)'"; \
	echo 'export CC PKG_CONFIG MAKE PROVIDER_LAS CORE_LIBADD srcdir'; \
	echo "exec $(SHELL) '$(abs_srcdir)/tests/check-install.sh' \"\$$@\""; \
	} >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@
