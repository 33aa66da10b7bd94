"""``qd.simt.warp``: CUDA warp intrinsics (warp size 32). `mask` names the participating lanes;
the kernels Quadrants generates run whole warps, so it is accepted for compatibility."""

from quadrants.simt._make import primitives

globals().update(primitives("warp", {
    "all_nonzero": "all_nonzero(mask, predicate) -> i32",
    "any_nonzero": "any_nonzero(mask, predicate) -> i32",
    "ballot": "ballot(predicate) -> u32",
    "shfl_sync_i32": "shfl_sync_i32(mask, val, offset) -> val of lane `offset`",
    "shfl_sync_f32": "shfl_sync_f32(mask, val, offset) -> val of lane `offset`",
    "shfl_up_i32": "shfl_up_i32(mask, val, offset)",
    "shfl_up_f32": "shfl_up_f32(mask, val, offset)",
    "shfl_down_i32": "shfl_down_i32(mask, val, offset)",
    "shfl_down_f32": "shfl_down_f32(mask, val, offset)",
    "shfl_xor_i32": "shfl_xor_i32(mask, val, offset)",
    "sync": "sync(mask): barrier for the warp's lanes.",
}))
