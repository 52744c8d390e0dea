"""The gRPC API's protobuf definitions (``proto/sopgym/...``) and their generated modules.

The modules under ``sopgym.proto.gen`` are generated at build time by ``setup.py``; if they are
missing or older than the ``.proto`` files (a fresh checkout, an edited ``.proto``), the first
:func:`gateway_v1` call regenerates them with grpcio-tools, so nothing generated is ever
committed or edited by hand.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

_lock = threading.Lock()


def _ensure_generated() -> None:
    from sopgym.proto import codegen

    if codegen.SOURCES.exists() and not codegen.up_to_date():
        try:
            codegen.generate()
        except ImportError as error:  # grpcio-tools absent: only a build can produce them
            raise ImportError(
                "the gRPC modules are not generated and grpcio-tools is not installed: "
                "reinstall sopgym (pip install -e .) or pip install grpcio-tools"
            ) from error
        importlib.invalidate_caches()


def gateway_v1() -> tuple[ModuleType, ModuleType]:
    """``(gateway_pb2, gateway_pb2_grpc)`` of the ``sopgym.gateway.v1`` API."""
    with _lock:
        _ensure_generated()
        pb2 = importlib.import_module("sopgym.proto.gen.gateway.v1.gateway_pb2")
        grpc = importlib.import_module("sopgym.proto.gen.gateway.v1.gateway_pb2_grpc")
    return pb2, grpc
