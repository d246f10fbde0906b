#pragma once
// The master's pillar pieces, from its config: the renderer pool and the compiler's settings.

#include <memory>

#include "halite/config/master_config.h"
#include "halite/pillar/compiler.h"
#include "halite/render/renderer.h"

namespace halite::daemon {

std::unique_ptr<render::Renderer> MakeRendererPool(const config::MasterConfig& config);
pillar::PillarSettings PillarSettingsFrom(const config::MasterConfig& config);

}  // namespace halite::daemon
