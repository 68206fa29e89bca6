"""Facts about the host and its GPUs that every Python runner reports the same way."""

from __future__ import annotations

import ctypes
import gc
import os
import platform
import resource
import sys
from typing import Any, Dict, List, Optional


def host_rss_bytes() -> int:
    """Resident set size of this process now (/proc/self/statm)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGESIZE")
    except (OSError, ValueError, IndexError):
        return 0


#: Set once reset_peak_rss reset the kernel's peak RSS: getrusage's ru_maxrss keeps the largest
#: ever, so the peak is then read from VmHWM, which clear_refs resets.
_peak_rss_was_reset = False


def _vm_hwm_bytes() -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # "VmHWM:  123 kB"
    except (OSError, ValueError, IndexError):
        pass
    return None


def host_peak_rss_bytes() -> int:
    """The process's peak resident set size: getrusage's (Linux reports KiB) in a process's first
    cell; after ``reset_peak_rss``, VmHWM of /proc/self/status, the peak since that reset."""
    if _peak_rss_was_reset:
        hwm = _vm_hwm_bytes()
        if hwm is not None:
            return hwm
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak_rss() -> bool:
    """Between two cells of one process (``Runner.end_cell``), after the ended cell's objects are
    dropped: collects garbage, hands the C heap's free memory back to the kernel (glibc's
    ``malloc_trim``), and resets the kernel's peak RSS (5 into /proc/self/clear_refs, as
    dlbench-torch does), so that ``host_peak_rss_bytes`` is the next cell's own: the RSS the
    process holds as that cell starts (interpreter, libraries, what earlier cells left allocated)
    plus what the cell adds. A fresh process's peak holds the first two as well. False when the
    kernel refused: the peak then stays the process's."""
    global _peak_rss_was_reset
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    _peak_rss_was_reset = True
    return True


def host_memory(label_device: str) -> Dict[str, Any]:
    """The host part of a MEMORY snapshot, with the names dlbench-torch uses."""
    return {"device": label_device, "host_rss_bytes": host_rss_bytes(), "host_peak_rss_bytes": host_peak_rss_bytes()}


def cpu_device() -> Dict[str, Any]:
    """HELLO's entry for the host CPU."""
    return {"type": "cpu", "index": 0, "logical_cpus": os.cpu_count() or 0}


def python_facts() -> Dict[str, Any]:
    """The interpreter, for HELLO's framework block."""
    return {"python": platform.python_version(), "python_implementation": platform.python_implementation(),
            "python_executable": sys.executable}


def format_uuid(raw: bytes) -> str:
    """A CUDA device UUID (16 bytes) in NVML's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx."""
    if len(raw) != 16:
        raise ValueError("a CUDA UUID is 16 bytes, got %d" % len(raw))
    h = raw.hex()
    return "GPU-%s-%s-%s-%s-%s" % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])


class _CudaDriver:
    """The CUDA driver API through ctypes (libcuda.so.1 ships with the driver), for the UUID of a
    CUDA ordinal when the framework does not expose it. cuInit creates no context."""

    def __init__(self) -> None:
        self._lib: Optional[ctypes.CDLL] = None
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            if lib.cuInit(0) == 0:
                self._lib = lib
        except (OSError, AttributeError):
            self._lib = None

    def uuid(self, ordinal: int) -> Optional[str]:
        if self._lib is None:
            return None
        device = ctypes.c_int(0)
        if self._lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
            return None
        raw = (ctypes.c_ubyte * 16)()
        get = getattr(self._lib, "cuDeviceGetUuid_v2", None) or getattr(self._lib, "cuDeviceGetUuid", None)
        if get is None or get(raw, device) != 0:
            return None
        return format_uuid(bytes(raw))


_driver: Optional[_CudaDriver] = None


def cuda_uuid(ordinal: int) -> Optional[str]:
    """The UUID (NVML's form) of CUDA device ``ordinal`` as this process numbers it (after
    CUDA_VISIBLE_DEVICES), or None when no CUDA driver is present."""
    global _driver
    if _driver is None:
        _driver = _CudaDriver()
    return _driver.uuid(ordinal)


def device_uuids(kind: str, ordinals: List[int]) -> Optional[List[str]]:
    """READY's ``device_uuids``: [] on the CPU; the GPUs' UUIDs on CUDA; None (leave the key out:
    every sampled GPU counts) when a UUID cannot be read."""
    if kind != "cuda":
        return []
    uuids = [cuda_uuid(i) for i in ordinals]
    if any(u is None for u in uuids):
        return None
    return [u for u in uuids if u is not None]
