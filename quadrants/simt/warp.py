"""``qd.simt.warp``: CUDA warp intrinsics (warp size 32). The mask arguments are accepted for
compatibility; the generated code always operates on the lanes active at the call."""

from quadrants.simt._builtin import kernel_only

_NAMES = {
    "all_nonzero": "all_nonzero(mask, pred): 1 when pred != 0 on every lane.",
    "any_nonzero": "any_nonzero(mask, pred): 1 when pred != 0 on any lane.",
    "unique": "unique(mask, pred): 1 when pred is the same on every lane.",
    "ballot": "ballot(pred): u32 with bit l set when pred != 0 on lane l.",
    "active_mask": "active_mask(): u32 mask of the active lanes.",
    "shfl_sync_i32": "shfl_sync_i32(mask, val, lane): val of lane `lane`.",
    "shfl_sync_f32": "shfl_sync_f32(mask, val, lane): val of lane `lane`.",
    "shfl_up_i32": "shfl_up_i32(mask, val, offset): val of lane - offset.",
    "shfl_up_f32": "shfl_up_f32(mask, val, offset): val of lane - offset.",
    "shfl_down_i32": "shfl_down_i32(mask, val, offset): val of lane + offset.",
    "shfl_down_f32": "shfl_down_f32(mask, val, offset): val of lane + offset.",
    "shfl_xor_i32": "shfl_xor_i32(mask, val, mask2): val of lane ^ mask2.",
    "sync": "sync(mask): barrier of the warp's lanes.",
}

for _name, _doc in _NAMES.items():
    globals()[_name] = kernel_only("warp", _name, _doc)


match_any = kernel_only(
    "warp", "match_any", "match_any(mask, v): not supported (a compile error in kernels)."
)
match_all = kernel_only(
    "warp", "match_all", "match_all(mask, v): not supported (a compile error in kernels)."
)


__all__ = list(_NAMES) + ["match_any", "match_all"]
