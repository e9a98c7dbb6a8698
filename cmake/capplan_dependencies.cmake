# The C++ header libraries capplan builds with: the system's copy when find_package finds one
# (Debian's -dev packages, vcpkg, conda...), else a pinned release fetched by URL and checked by
# SHA-256, so a machine with only pip and a compiler can build the wheel. Nothing third-party is
# kept in the repository. CAPPLAN_FETCH_DEPENDENCIES=ON skips the system copies (CI uses it to
# test the fetch path). Each dependency's path is printed and kept in the global property
# CAPPLAN_DEPENDENCY_REPORT (a list).
#
# The archives are Debian's copies of the upstream releases (deb.debian.org/debian/pool, reachable
# from anywhere); the SHA-256 values are those of Debian's source packages (.dsc of bookworm:
# eigen3 3.4.0-4, nlohmann-json3 3.11.2-2, fmtlib 9.1.0+ds1-2, doctest 2.4.9~ds-1). Eigen's and
# nlohmann_json's archives are upstream's own (the same SHA-256 as spack's and xmake's pins of
# upstream's URL), which is listed second.

include(FetchContent)
option(CAPPLAN_FETCH_DEPENDENCIES "Fetch the pinned header libraries even when the system has them" OFF)

# capplan_header_dependency(<package> <target> <include subdir> URL <urls...> SHA256 <hash>
#                           [DEFINES <definitions...>] [FIND_ARGS <find_package arguments...>])
# Defines <target> (the name the package's own CMake config exports) either way.
function(capplan_header_dependency package target include_subdir)
  cmake_parse_arguments(PARSE_ARGV 3 dep "" "SHA256" "URL;DEFINES;FIND_ARGS")
  if(NOT CAPPLAN_FETCH_DEPENDENCIES)
    find_package(${package} ${dep_FIND_ARGS} CONFIG QUIET)
  endif()
  if(${package}_FOUND AND TARGET ${target})
    set(how "system (${${package}_DIR}, version ${${package}_VERSION})")
  else()
    string(TOLOWER "capplan_dep_${package}" name)
    # SOURCE_SUBDIR that does not exist: download and unpack only, never run the project's own build.
    FetchContent_Declare(${name} URL ${dep_URL} URL_HASH SHA256=${dep_SHA256}
                         SOURCE_SUBDIR capplan-headers-only DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
    FetchContent_MakeAvailable(${name})
    add_library(${target} INTERFACE IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${${name}_SOURCE_DIR}/${include_subdir}"
      INTERFACE_COMPILE_DEFINITIONS "${dep_DEFINES}")
    list(GET dep_URL 0 first_url)
    set(how "fetched (${first_url})")
  endif()
  message(STATUS "capplan: ${package} ${how}")
  set_property(GLOBAL APPEND PROPERTY CAPPLAN_DEPENDENCY_REPORT "${package}: ${how}")
endfunction()

set(_debian "http://deb.debian.org/debian/pool/main")
capplan_header_dependency(Eigen3 Eigen3::Eigen "."
  URL ${_debian}/e/eigen3/eigen3_3.4.0.orig.tar.bz2
      https://gitlab.com/libeigen/eigen/-/archive/3.4.0/eigen-3.4.0.tar.bz2
  SHA256 b4c198460eba6f28d34894e3a5710998818515104d6e74e5cc331ce31e46e626
  FIND_ARGS 3.3)
capplan_header_dependency(nlohmann_json nlohmann_json::nlohmann_json "single_include"
  URL ${_debian}/n/nlohmann-json3/nlohmann-json3_3.11.2.orig.tar.gz
      https://github.com/nlohmann/json/archive/refs/tags/v3.11.2.tar.gz
  SHA256 d69f9deb6a75e2580465c6c4c5111b89c4dc2fa94e3a85fcd2ffcd9a143d9273
  FIND_ARGS 3.10)
# fmt is used header-only (FMT_HEADER_ONLY): the wheel must not depend on a distribution's libfmt.so.
capplan_header_dependency(fmt fmt::fmt-header-only "include"
  URL ${_debian}/f/fmtlib/fmtlib_9.1.0+ds1.orig.tar.gz
  SHA256 84ce1c2d0be3a9863935137969dcec6970125caac032f82474640bfc81463583
  DEFINES FMT_HEADER_ONLY=1)
if(CAPPLAN_BUILD_TESTS)
  capplan_header_dependency(doctest doctest::doctest "."
    URL ${_debian}/d/doctest/doctest_2.4.9~ds.orig.tar.xz
    SHA256 7cc78169975bea36e70ab9d67e7de9b03d89b38653499ad03243e3944429b1ab)
endif()
