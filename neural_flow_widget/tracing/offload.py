"""Models dispatched by accelerate (``device_map``, ``cpu_offload``, ``disk_offload``): each
module's ``forward`` is wrapped by a hook that moves its inputs to its execution device and
loads its offloaded weights (from the CPU or from files in the offload folder) before the call,
and puts them back on the meta device after it. The call tracker wraps that hooked ``forward``
like any other, so the hooks run inside their stage and the model traces as when loaded
plainly. What this module adds is the fix for the one failure of their own: weights that
cannot be loaded (an offload folder deleted or moved since the model was dispatched).

>>> offload_fix(ValueError("no")) is None
True
"""

from __future__ import annotations

import os

__all__ = ["offload_fix"]

_HOOKS = os.sep + os.path.join("accelerate", "hooks.py")


def offload_fix(error: BaseException | None) -> str | None:
    """The fix for ``error`` when accelerate's hook raised it before the module's own forward
    ran (loading the module's offloaded weights, or moving its inputs), else None."""
    tb = getattr(error, "__traceback__", None)
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.endswith(_HOOKS) and code.co_name == "pre_forward":
            return (
                "accelerate's hook raised it while loading this module's offloaded weights "
                "onto its execution device, before the module ran: check that the offload "
                "folder (offload_dir / offload_folder) still holds the weights it was given, "
                "or dispatch the model again (dispatch_model, from_pretrained(device_map=...))"
            )
        tb = tb.tb_next
    return None
