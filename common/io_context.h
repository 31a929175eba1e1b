// The io_context every I/O thread of reducerd and of the client library runs.
//
// Built without asio's concurrency hint of 1. With that hint asio keeps what a
// thread posts to its own io_context in a private queue until the handler
// running there returns; a post made later, from another thread, goes to the
// shared queue at once and so runs first. Both ends post to a connection's or
// a stream's thread from several threads (the session's last contribution
// sends every rank's result, the caller issues operations while a stream
// resets itself), and three ordering bugs came from that queue. Here work runs
// in the order it was posted, whichever thread posted it; measured on loopback
// (bench/cpu_per_byte.sh, 4 KiB to 64 MiB) the shared queue costs nothing
// visible.
//
// Header-only: only targets that link asio include it.
#pragma once

#include <asio/io_context.hpp>

#include <memory>

namespace rs {

inline std::unique_ptr<asio::io_context> MakeIoContext() { return std::make_unique<asio::io_context>(); }

}  // namespace rs
