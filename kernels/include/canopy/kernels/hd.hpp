// CANOPY_HD: a function the CUDA kernels and the host both compile (__host__ __device__ under
// nvcc and NVRTC, nothing elsewhere), for the definitions of what one element of a kernel does.
#pragma once

#if defined(__CUDACC__)
#define CANOPY_HD __host__ __device__
#else
#define CANOPY_HD
#endif
