dnl hostrdma_provider.m4 - choose, per verbs provider, whether it is built
dnl as a loadable module (dl), linked into the core (builtin), or not at all.
dnl
dnl HOSTRDMA_PROVIDER([name], [default], [description]) adds --enable-name
dnl and the automake conditionals PROV_NAME_DL and PROV_NAME_BUILTIN; every
dnl builtin provider is listed in HOSTRDMA_BUILTIN_PROVIDERS(X) in config.h
dnl as X(name), so the core can declare and call rnicpi_builtin_name().
dnl An optional fourth argument is a probe for providers that need outside
dnl libraries: with it, "auto" is accepted too, and the probe must set
dnl hostrdma_probe_ok to yes or no; auto becomes dl or no from its answer,
dnl and an explicit dl or builtin whose probe fails is an error.

AC_DEFUN([HOSTRDMA_PROVIDERS_INIT], [
	hostrdma_builtin_list=""
	hostrdma_provider_summary=""
])

AC_DEFUN([HOSTRDMA_PROVIDER], [
	AC_ARG_ENABLE([$1],
		[AS_HELP_STRING([--enable-$1=@<:@]m4_ifval([$4], [auto|])[dl|builtin|no@:>@],
			[build the $3 provider as a module, into the core, or not (default: $2)])],
		[], [enable_$1=$2])
	AS_CASE([$enable_$1],
		[yes], [enable_$1=dl],
		[dl|builtin|no], [],
		[auto], [m4_ifval([$4], [],
			[AC_MSG_ERROR([--enable-$1=auto: expected dl, builtin or no])])],
		[AC_MSG_ERROR([--enable-$1=$enable_$1: expected m4_ifval([$4], [auto|])dl|builtin|no])])
	m4_ifval([$4], [
	AS_IF([test "x$enable_$1" != xno], [
		hostrdma_probe_ok=no
		$4
		AS_CASE([$enable_$1/$hostrdma_probe_ok],
			[auto/yes], [enable_$1=dl],
			[auto/no], [enable_$1=no],
			[*/no], [AC_MSG_ERROR([--enable-$1=$enable_$1, but what the $1 provider needs was not found])])
	])])
	AS_IF([test "x$enable_$1" = xbuiltin],
		[hostrdma_builtin_list="$hostrdma_builtin_list X($1)"])
	AS_IF([test "x$enable_$1" != xno],
		[AC_DEFINE(m4_toupper([HAVE_PROV_$1]), [1], [the $1 provider is built])])
	hostrdma_provider_summary="$hostrdma_provider_summary $1=$enable_$1"
	AM_CONDITIONAL(m4_toupper([PROV_$1_DL]), [test "x$enable_$1" = xdl])
	AM_CONDITIONAL(m4_toupper([PROV_$1_BUILTIN]), [test "x$enable_$1" = xbuiltin])
	AM_CONDITIONAL(m4_toupper([PROV_$1]), [test "x$enable_$1" != xno])
])

AC_DEFUN([HOSTRDMA_PROVIDERS_DONE], [
	AC_DEFINE_UNQUOTED([HOSTRDMA_BUILTIN_PROVIDERS(X)], [$hostrdma_builtin_list],
		[X(name) for every provider linked into the core])
])

dnl Threads without pulling the whole ax_pthread: glibc has pthreads in libc,
dnl -pthread still sets the right macros for both gcc and clang.
AC_DEFUN([AX_PTHREAD_SIMPLE], [
	PTHREAD_CFLAGS=-pthread
	PTHREAD_LIBS=-pthread
	AC_SUBST([PTHREAD_CFLAGS])
	AC_SUBST([PTHREAD_LIBS])
])
