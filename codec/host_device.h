// Lets a function be compiled for both the CPU codec and the CUDA kernels, so
// the two share one definition of every per-element rule (and so produce the
// same archive bytes).
#ifndef EBZIP_CODEC_HOST_DEVICE_H_
#define EBZIP_CODEC_HOST_DEVICE_H_

#if defined(__CUDACC__)
#define EBZIP_HD __host__ __device__
#else
#define EBZIP_HD
#endif

#endif  // EBZIP_CODEC_HOST_DEVICE_H_
