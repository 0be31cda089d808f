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
      fast/attention.cu
      fast/attention_mma_forward.cu
      fast/model.cu
      fast/stream.cu
      fast/gpt2.cu
      fast/gpt2_ops.cu
      fast/decode.cu
      fast/attention_mix.cu
      fast/adamw.cu
      fast/bench.cu
      fast/attention_mma_backward.cu
      fast/backend.c
      fast/capabilities.c
    )
    # -DVRL_CUDART_STATIC=ON links the CUDA runtime into the programs (libcudart_static.a):
    # scripts/gpu.sh's prebuilt binaries then need no libcudart.so on the GPU machine
    option(VRL_CUDART_STATIC "link the CUDA runtime statically" OFF)
    if(VRL_CUDART_STATIC)
      set(vrl_cudart CUDA::cudart_static)
      set(vrl_cudart_kind Static)
    else()
      set(vrl_cudart CUDA::cudart)
      set(vrl_cudart_kind Shared)
    endif()
    set_target_properties(vrl_fast PROPERTIES CUDA_STANDARD 17 CUDA_RUNTIME_LIBRARY ${vrl_cudart_kind})
    target_compile_options(vrl_fast PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-O3 -Xcompiler=-Wall,-Wextra>)
    target_link_libraries(vrl_fast PUBLIC vrl_common ${vrl_cudart} CUDA::cublasLt)
    # fast/'s Hopper GEMM (fast/gemm_wgmma.cu) and attention (fast/attention_wgmma_forward.cu, fast/attention_wgmma_backward.cu): wgmma and TMA exist only in the arch-specific
    # sm_90a target, so its kernels are sm_90a SASS alone (H100, H200); model.cu launches them only
    # on a compute capability 9.0 device (gemm_wgmma_device) and takes cuBLASLt elsewhere
    add_library(vrl_fast_sm90a OBJECT fast/gemm_wgmma.cu fast/attention_wgmma_forward.cu
                fast/attention_wgmma_backward.cu)
    set_target_properties(vrl_fast_sm90a PROPERTIES CUDA_ARCHITECTURES "90a-real" CUDA_STANDARD 17
                          CUDA_RUNTIME_LIBRARY ${vrl_cudart_kind} POSITION_INDEPENDENT_CODE ON)
    target_include_directories(vrl_fast_sm90a PRIVATE ${CMAKE_SOURCE_DIR})
    target_compile_options(vrl_fast_sm90a PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-O3 -Xcompiler=-Wall,-Wextra>)
    target_sources(vrl_fast PRIVATE $<TARGET_OBJECTS:vrl_fast_sm90a>)
    # fast/mma.cuh's inline PTX assembled by ptxas for these architectures (compile only)
    add_library(vrl_mma_ptx_compile OBJECT conformance/mma_ptx_compile.cu)
    target_include_directories(vrl_mma_ptx_compile PRIVATE ${CMAKE_SOURCE_DIR})
    target_compile_options(vrl_mma_ptx_compile PRIVATE -Xcompiler=-Wall,-Wextra)
    # NCCL (data parallelism, fast/zero.cu): in the CUDA toolkit's folders or the system's;
    # -DVRL_NCCL=OFF builds without it (fast/ then trains in one process only).
    option(VRL_NCCL "use NCCL for fast/'s data parallelism when found" ON)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    set(VRL_HAVE_NCCL OFF)
    if(VRL_NCCL AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      set(VRL_HAVE_NCCL ON)
      target_sources(vrl_fast PRIVATE fast/zero.cu)
      target_include_directories(vrl_fast PRIVATE ${NCCL_INCLUDE_DIR})
      target_compile_definitions(vrl_fast PRIVATE VRL_HAVE_NCCL=1)
      target_link_libraries(vrl_fast PUBLIC ${NCCL_LIBRARY})
      message(STATUS "vrl: NCCL ON (${NCCL_LIBRARY})")
    elseif(NOT VRL_NCCL)
      message(STATUS "vrl: NCCL OFF (-DVRL_NCCL=OFF); fast/ trains in one process")
    else()
      message(STATUS "vrl: no NCCL found; fast/ trains in one process")
    endif()
    # cuDNN fused attention (--attention cudnn, fast/attention_cudnn.cpp): cuDNN's headers and
    # library (the CUDA toolkit's folders, -DCUDNN_ROOT=DIR, or $CUDNN_ROOT) and cudnn-frontend's
    # headers (.deps/cudnn-frontend/include from scripts/cudnn_frontend.sh, or
    # -DCUDNN_FRONTEND_INCLUDE_DIR=DIR). AUTO builds the path when all three are found and
    # otherwise compiles it out (`--attention cudnn` then says so); ON requires them; OFF skips.
    set(VRL_CUDNN AUTO CACHE STRING "cuDNN fused attention: AUTO, ON or OFF")
    set_property(CACHE VRL_CUDNN PROPERTY STRINGS AUTO ON OFF)
    if(NOT VRL_CUDNN MATCHES "^(AUTO|ON|OFF)$")
      message(FATAL_ERROR "vrl: -DVRL_CUDNN=${VRL_CUDNN}: not AUTO, ON or OFF")
    endif()
    set(VRL_HAVE_CUDNN OFF)
    if(NOT VRL_CUDNN STREQUAL "OFF")
      find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
                PATH_SUFFIXES include)
      find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT}
                   ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
      find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
                HINTS ${CMAKE_SOURCE_DIR}/.deps/cudnn-frontend/include NO_DEFAULT_PATH)
      if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND CUDNN_FRONTEND_INCLUDE_DIR)
        set(VRL_HAVE_CUDNN ON)
        target_sources(vrl_fast PRIVATE fast/attention_cudnn.cpp)
        # SYSTEM: the frontend's own warnings are not ours (-Wall -Wextra stays on our code)
        target_include_directories(vrl_fast SYSTEM PRIVATE ${CUDNN_FRONTEND_INCLUDE_DIR} ${CUDNN_INCLUDE_DIR})
        target_compile_definitions(vrl_fast PRIVATE VRL_HAVE_CUDNN=1)
        # cuDNN is loaded on first use (dlopen: the frontend's dynamic loading), not linked: a
        # program starts where cuDNN is missing, and `--attention cudnn` then says so. The path
        # found here is tried first, then libcudnn.so.9 by the loader's search. The frontend's
        # few CUDA runtime calls (and nvrtc, for engines never called here) are loaded likewise.
        set_property(SOURCE fast/attention_cudnn.cpp APPEND PROPERTY COMPILE_DEFINITIONS
                     NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING "VRL_CUDNN_LIBRARY=\"${CUDNN_LIBRARY}\"")
        target_link_libraries(vrl_fast PUBLIC ${CMAKE_DL_LIBS})
        message(STATUS "vrl: cuDNN attention ON (${CUDNN_LIBRARY}; frontend ${CUDNN_FRONTEND_INCLUDE_DIR})")
      elseif(VRL_CUDNN STREQUAL "ON")
        message(FATAL_ERROR "vrl: -DVRL_CUDNN=ON but not found: cudnn.h (${CUDNN_INCLUDE_DIR}), libcudnn "
                            "(${CUDNN_LIBRARY}), cudnn_frontend.h (${CUDNN_FRONTEND_INCLUDE_DIR}; run "
                            "scripts/cudnn_frontend.sh)")
      else()
        message(STATUS "vrl: cuDNN attention not built (cudnn.h: ${CUDNN_INCLUDE_DIR}, libcudnn: "
                       "${CUDNN_LIBRARY}, cudnn_frontend.h: ${CUDNN_FRONTEND_INCLUDE_DIR}; see docs/fast.md)")
      endif()
    endif()
    message(STATUS "vrl: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "vrl: no CUDA compiler found; the CUDA backend is not built")
  endif()
endif()
