// The single-node core under its test names (catalog/local_node.h).
#pragma once

#include "catalog/local_node.h"

namespace cairn::testing {
using catalog::LocalNode;
using catalog::LocalNodeOptions;
}  // namespace cairn::testing
