# The CPU calibration's probe kernels (src/cpu_probe_kernels.cpp) once more per x86-64 vector
# instruction set, chosen at run time by src/cpu_isa.cpp; the library itself, the baseline copy of
# the kernels included, stays baseline x86-64 so that a wheel runs on any x86-64 CPU.
#
# Each variant is an object library compiled like `target` plus its -m flags, then copied by objcopy
# with every symbol but its entry point (capplan_probe_kernels_<isa>) made local and its COMDAT
# groups dissolved: otherwise the linker would keep one copy of each inline function (Eigen's,
# the standard library's) for the whole program, and baseline code could end up calling a copy
# compiled for AVX-512. That needs ELF and objcopy: Linux with GCC or Clang on x86-64; elsewhere only
# the baseline is built.
set(CAPPLAN_PROBE_FLAGS_avx2 -mavx2 -mfma)
# GCC 12's AVX-512 headers warn about their own _mm512_undefined_* (GCC bug 105593).
set(CAPPLAN_PROBE_FLAGS_avx512 -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx2 -mfma
    $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)

function(capplan_add_probe_variants target source)
  if(NOT (CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_SYSTEM_NAME STREQUAL "Linux"
          AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND CMAKE_OBJCOPY AND CMAKE_OBJDUMP AND CMAKE_NM))
    message(STATUS "capplan: CPU probes baseline only (runtime dispatch needs Linux x86-64, GCC or Clang, objcopy)")
    return()
  endif()
  foreach(isa avx2 avx512)
    set(variant ${target}_probes_${isa})
    set(object ${CMAKE_CURRENT_BINARY_DIR}/${variant}.o)
    add_library(${variant} OBJECT ${source})
    target_compile_definitions(${variant} PRIVATE CAPPLAN_PROBE_ISA=${isa})
    # -fno-gnu-unique: GCC would give static locals of inline functions (Eigen's cache sizes) a
    # binding objcopy cannot make local. -fno-sanitize=all: a sanitizer build (CMakePresets asan, tsan)
    # would add a module constructor, load-time code compiled for this ISA; -O2 in Debug builds, whose -O0
    # leaves constant initialisers to run at load time (and a probe should time optimised kernels).
    target_compile_options(${variant} PRIVATE $<TARGET_PROPERTY:${target},COMPILE_OPTIONS> ${CAPPLAN_PROBE_FLAGS_${isa}}
                           $<$<CONFIG:Debug>:-O2> -fno-lto -fno-sanitize=all $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
    target_include_directories(${variant} PRIVATE $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
    target_link_libraries(${variant} PRIVATE Eigen3::Eigen)
    set_target_properties(${variant} PROPERTIES INTERPROCEDURAL_OPTIMIZATION OFF)
    add_custom_command(OUTPUT ${object}
      COMMAND ${CMAKE_OBJCOPY} --remove-section=.group --keep-global-symbol=capplan_probe_kernels_${isa}
              $<TARGET_OBJECTS:${variant}> ${object}
      COMMAND ${CMAKE_COMMAND} -DOBJDUMP=${CMAKE_OBJDUMP} -DNM=${CMAKE_NM} -DOBJECT=${object} -DISA=${isa}
              -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/check_probe_object.cmake
      DEPENDS ${variant} $<TARGET_OBJECTS:${variant}>
      COMMENT "capplan: ${isa} probe kernels with local symbols"
      VERBATIM)
    set_source_files_properties(${object} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(${target} PRIVATE ${object})
    string(TOUPPER ${isa} ISA)
    target_compile_definitions(${target} PRIVATE CAPPLAN_PROBES_${ISA})
  endforeach()
  message(STATUS "capplan: CPU probes for baseline, AVX2+FMA and AVX-512, chosen at run time")
endfunction()

capplan_add_probe_variants(capplan_core ${CMAKE_CURRENT_SOURCE_DIR}/src/cpu_probe_kernels.cpp)
