"""Compile every gpu kernel ahead of time for a GPU architecture, on a machine without a GPU.

``python -m oar_triton.aot`` (default: sm_90, the H100/H200) compiles each configuration the
kernel modules list (``aot_configs()`` in each module of ``oar_triton.kernels.KERNEL_MODULES`` and
``OTHER_KERNEL_MODULES``)
to a cubin with Triton's compiler and ptxas, and prints one line per configuration; it exits 1
when any fails, naming it and the compiler's message. It needs no driver and no GPU, and it must
run without ``TRITON_INTERPRET`` (the interpreter has nothing to compile).

A configuration is ``(label, kernel, signature, constexprs)``, optionally with a fifth element,
the compile options (``{"num_warps": 8, "num_stages": 3}``): ``signature`` maps every
non-constexpr parameter to a Triton type (``"*fp32"``, ``"i64"``, ``"fp32"``) and each
constexpr parameter to ``"constexpr"``, whose value ``constexprs`` gives.

    python -m oar_triton.aot                 # every kernel, for sm_90
    python -m oar_triton.aot --arch 100 -k matmul --jobs 2
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

POINTER_TYPES = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32", "float64": "*fp64", "int8": "*i8",
                 "int16": "*i16", "int32": "*i32", "int64": "*i64", "uint8": "*u8", "bool": "*u8"}  # bool memory as bytes (array.Pointer)


def configs(selected: str | None = None) -> list[tuple]:
    """Every module's configurations whose label contains ``selected`` (all when None)."""
    from oar_triton.kernels import KERNEL_MODULES, OTHER_KERNEL_MODULES

    import oar

    oar.ones([1])  # loads the plugins: the generated kernels read their lowerings from the registry
    found = []
    for module_name in (*KERNEL_MODULES, *OTHER_KERNEL_MODULES):
        module = importlib.import_module(module_name)
        for config in module.aot_configs():
            if selected is None or selected in config[0]:
                found.append((module_name, *config))
    return found


def _compile(index: int, selected: str | None, arch: int) -> tuple[str, float, str | None]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    _, label, kernel, signature, constexprs, *rest = configs(selected)[index]
    options = rest[0] if rest else {}
    start = time.perf_counter()
    try:
        compiled = triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=constexprs),
                                  target=GPUTarget("cuda", arch, 32), options=options)
        if not compiled.asm.get("cubin"):
            return label, time.perf_counter() - start, "no cubin was produced"
    except Exception as exc:  # every failure is reported with its configuration, the others go on
        return label, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"
    return label, time.perf_counter() - start, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oar_triton.aot", description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability as one number (90: sm_90)")
    parser.add_argument("-k", dest="selected", default=None, help="only configurations whose label contains this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compiler processes")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        print("oar_triton.aot: unset TRITON_INTERPRET: the interpreter compiles nothing", file=sys.stderr)
        return 2
    # A cache of its own: every configuration is compiled here, none read from an earlier run's cache.
    cache = tempfile.TemporaryDirectory(prefix="oar-triton-aot-")
    os.environ["TRITON_CACHE_DIR"] = cache.name
    count = len(configs(args.selected))
    failed = 0
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(_compile, i, args.selected, args.arch) for i in range(count)]
        for future in futures:
            label, seconds, error = future.result()
            status = "ok" if error is None else f"FAILED: {error}"
            failed += error is not None
            print(f"sm_{args.arch} {label}: {status} ({seconds:.1f} s)", flush=True)
    cache.cleanup()
    print(f"{count - failed} of {count} kernel configurations compiled for sm_{args.arch} "
          f"in {time.perf_counter() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
