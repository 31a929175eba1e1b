// The "source" a connection is counted under by admission control
// (server/core/admission.h): an IPv4 address as it is, an IPv6 address by
// its /64 prefix. One IPv6 host (a LAN, a cloud VM) usually holds a whole
// /64 and can connect from any of its 2^64 addresses: counted per address,
// the per-source limits would hold nothing.
//
// Pure; thread-safe.
#pragma once

#include <string>

#include <asio/ip/address.hpp>

namespace rs::server {

// "10.0.0.7"; "2001:db8:1:2::/64" for any address in that /64; an
// IPv4-mapped IPv6 address ("::ffff:10.0.0.7") as its IPv4 address.
std::string SourceOf(const asio::ip::address& address);

}  // namespace rs::server
