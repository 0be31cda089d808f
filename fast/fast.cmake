# fast.cmake: the CUDA backend (fast/), built only when a CUDA compiler is found.
#
# -DVRL_CUDA=OFF skips it. When it is built, VRL_HAVE_CUDA is ON and `vrl_fast` is a
# static library: the kernels (.cu, sm_90 SASS + compute_90 PTX) and the C glue (.c).
# Without nvcc the CPU build is exactly what it was.
option(VRL_CUDA "build the CUDA backend when nvcc is available" ON)
set(VRL_HAVE_CUDA OFF)
if(VRL_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")   # H100/H200 SASS + PTX (CUDA 13 has no old archs)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(VRL_HAVE_CUDA ON)
    add_library(vrl_fast STATIC
      fast/ops.cu
      fast/model.cu
      fast/adamw.cu
      fast/bench.cu
      fast/backend.c
      fast/value_plan.c
    )
    set_target_properties(vrl_fast PROPERTIES CUDA_STANDARD 17 CUDA_RUNTIME_LIBRARY Shared)
    target_compile_options(vrl_fast PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-O3 -Xcompiler=-Wall,-Wextra>)
    target_link_libraries(vrl_fast PUBLIC vrl_common CUDA::cudart CUDA::cublasLt)
    message(STATUS "vrl: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "vrl: no CUDA compiler found; the CUDA backend is not built")
  endif()
endif()
