#include "validate/negative_control.h"

#include <memory>
#include <vector>

#include "common/error.h"

namespace kvrt::validate {

namespace {

// Deterministic relative factor in [1 - noise, 1 + noise] for the scale at `key`.
float scale_factor(float noise, uint64_t key) {
  key = (key + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
  key ^= key >> 31;
  return 1.0f +
         noise * (static_cast<float>(key >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f);
}

// Multiplies the scale of every group of position pos of one side (token tiles) by its factor.
void damage_position(kv::KvCache& cache, kv::TileRole side, int layer, int pos, float noise) {
  const kv::CacheLayout& l = cache.layout();
  const kv::SideLayout& s = l.layers[size_t(layer)].side(side);
  const kv::TileFormat f = s.format->tile(side, l.shape.head_dim, l.group);
  const int i = pos - s.sinks;  // among the packed positions
  for (int h = 0; h < l.shape.n_kv_heads; ++h) {
    uint8_t* tile = cache.tile_for_test(layer, h, side, pos);
    const uint64_t key = (static_cast<uint64_t>(layer) << 40) ^ (uint64_t(pos) << 8) ^ h;
    for (int b = 0; b < f.n_groups(); ++b) {
      uint8_t* p = tile + f.scale_offset(0, b, i % kv::kTileTokens);
      kv::store_scale(p, kv::load_scale(p) * scale_factor(noise, key * 4099 + b));
    }
  }
}

}  // namespace

std::function<void(kv::KvCache&, int, int, int)> scale_damage(float scale_noise, int only_layer) {
  auto done = std::make_shared<std::vector<int>>();  // [n_layers][K, V] positions damaged so far
  return [scale_noise, only_layer, done](kv::KvCache& cache, int layer, int pos0, int) {
    if (only_layer >= 0 && layer != only_layer) return;
    const kv::CacheLayout& l = cache.layout();
    const kv::LayerLayout& ll = l.layers[size_t(layer)];
    const bool k_tiles = ll.k.packing == kv::Packing::kTokenTiles,
               v_tiles = ll.v.packing == kv::Packing::kTokenTiles;
    if (only_layer < 0 && !(k_tiles && v_tiles))
      throw Error("the negative control damages token tiles only, not " + cache.config().name(),
                  ErrorKind::kUsage);
    done->resize(2 * size_t(l.shape.n_layers), 0);
    const kv::HeadView v = cache.view(layer, 0);
    int& k_from = (*done)[2 * size_t(layer)];
    int& v_from = (*done)[2 * size_t(layer) + 1];
    if (pos0 == 0) k_from = v_from = l.sinks;  // the cache was cleared (or is new); sinks stay FP32
    if (k_tiles)
      for (; k_from < v.k.n_packed; ++k_from)
        damage_position(cache, kv::TileRole::kKey, layer, k_from, scale_noise);
    if (v_tiles)
      for (; v_from < v.v.n_packed; ++v_from)
        damage_position(cache, kv::TileRole::kValue, layer, v_from, scale_noise);
  };
}

std::string damaged_name(const kv::KvConfig& kv, float scale_noise, int layer) {
  return kv.name() + ",noise=" + std::to_string(scale_noise) +
         (layer >= 0 ? ",noise_layer=" + std::to_string(layer) : "");
}

}  // namespace kvrt::validate
