#pragma once
/// \file Build mode. Header-only is the default: every function is defined in the headers. With
/// `STRATA_SEPARATE_COMPILATION` defined (CMake: link `strata::runtime`; Meson: `-Dheader_only=false`)
/// the runtime's non-template bodies (system_base, the transports' virtual faces, tcp) are compiled
/// once into the strata runtime library and user files only declare them, the way Asio's
/// `ASIO_SEPARATE_COMPILATION` and {fmt}'s `FMT_HEADER_ONLY` work. Every file of one program must
/// use the same mode (the CMake target and the Meson dependency set the macro for their users).

#if defined(STRATA_SEPARATE_COMPILATION)
#define STRATA_HEADER_ONLY 0
/// Declares a non-template function that the runtime library defines (nothing in the compiled mode).
#define STRATA_DECL
#else
#define STRATA_HEADER_ONLY 1
#define STRATA_DECL inline
#endif
