"""The static graph (layer 3): programs, tracing, control flow, rewrites and passes, the executor,
the static backward.

Eager code never imports it: ``oar.jit``, ``oar.static`` and the registries' lazy entries (the
control-flow ops and the passes) load it when a program is captured, loaded or optimized. Each
module imports only the modules listed before it here, and the engine and op definitions below
(``tests/core/test_layering.py`` checks it): program, rewrite, tracing, executor, control_flow,
passes, fusion, static_backward.
"""
