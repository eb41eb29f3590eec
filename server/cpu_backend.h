// The CPU backend: the reference codec (codec/) on the scheduler's threads.
// Within one array the codec already spreads frames, blocks and chunks over
// the process's thread pool; a batch of small arrays is spread the same way.
#ifndef EBZIP_SERVER_CPU_BACKEND_H_
#define EBZIP_SERVER_CPU_BACKEND_H_

#include <memory>

#include "server/backend.h"

namespace ebzip::server {

// `workers` scheduler threads (each takes one batch at a time), so a large
// array does not hold up every small one behind it.
std::unique_ptr<Backend> MakeCpuBackend(int workers);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_CPU_BACKEND_H_
