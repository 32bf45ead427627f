"""How a black-box audit lays out its draw: the few constants that decide which outputs exist and which
of them choose the events. They live here, below both dpcheck.blackbox (which draws by them) and
dpcheck.limits (which estimates the memory a draw holds from them), so neither imports the other.

Results depend on these values (a chunk's outputs come from the chunk's own seed), never on --workers.
"""
CHUNK = 1 << 16                 # outputs per chunk; fixed so results never depend on workers
SELECTION_FRACTION = 0.25       # share of each side's sample that chooses the events (dpcheck.blackbox.audit)
SELECTION_CAP = 1 << 20         # at most this many per side (2^20: the selection sample held in memory)
