// A client::Client for a job of one rank and no reducers: every all-reduce
// is the identity and completes at once. It lets `rs-train --world 1` train
// without reducers (compute alone, or a smoke run) through the same code.
//
// Thread-safety: as client::Client.
#pragma once

#include <memory>

#include "client/client.h"

namespace rs::trainer {

std::unique_ptr<client::Client> MakeLocalClient();

}  // namespace rs::trainer
