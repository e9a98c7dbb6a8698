# Run after objcopy on each ISA variant of the probe kernels (cmake/cpu_probes.cmake): the object
# must run nothing at load time (no .init_array / .ctors: a static initialiser there would execute
# AVX-512 code on every CPU) and export nothing but its entry point.
execute_process(COMMAND ${OBJDUMP} -h ${OBJECT} OUTPUT_VARIABLE sections RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "capplan: ${OBJDUMP} -h ${OBJECT} failed")
endif()
if(sections MATCHES "\\.(init_array|ctors|preinit_array)")
  message(FATAL_ERROR "capplan: ${OBJECT} has load-time initialisers; the ${ISA} probes must not run before dispatch")
endif()
execute_process(COMMAND ${NM} -g --defined-only ${OBJECT} OUTPUT_VARIABLE globals RESULT_VARIABLE rc)
string(REGEX REPLACE "[0-9a-fA-F]* [A-Za-z] capplan_probe_kernels_${ISA}\n?" "" others "${globals}")
string(STRIP "${others}" others)
if(NOT rc EQUAL 0 OR NOT others STREQUAL "")
  message(FATAL_ERROR "capplan: ${OBJECT} exports more than capplan_probe_kernels_${ISA}: ${others}")
endif()
