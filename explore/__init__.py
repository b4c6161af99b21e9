"""Design-space exploration above the workload layer: LIBRA's per-dimension bandwidth
allocation (docs/libra.md), solved exactly on OR-Tools.

Modules: `explore.network` (the network's dimensions, the traffic a collective puts on each,
the mapping of communicator groups onto dimensions), `explore.cost` (the linear network cost
model), `explore.timing` (the time model: a task graph whose iteration time is a function of
the bandwidths, and its exact evaluation), `explore.constraints` (the constraint language),
`explore.solve_lp` and `explore.solve_cp` (the continuous and catalogue solvers),
`explore.grid` (equal split and grid baselines), `explore.libra_inputs` (LIBRA's own input
files), `explore.problem` (a problem put together and solved).
"""
