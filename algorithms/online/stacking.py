"""Several privatizers side by side in one batch of runs (for sweeps: UCBVI + JDP/LDP at many eps).

A sweep over privatizers and budgets is a set of independent runs; batching them into one run axis
lets the agent's planning, simulation and regret evaluation pay their per-episode numpy overhead once
for the whole sweep instead of once per configuration. Each part keeps its own privatizer, its own
noise stream (spawned from the batch's noise stream) and its own width E, so the agent sees one E
per run (DPUCBVI accepts ``width`` of shape (runs,)). Nothing is shared between parts except the
arrays they are laid out in: every part is exactly the privatizer it wraps, on its slice of runs.
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError


class StackedPrivatizer:
    """parts: list of (privatizer, runs). Run axis layout: part 0's runs first, then part 1's, ...

    Implements the CountPrivatizer protocol the agent uses (start / width / observe / release /
    true_counts); ``slices`` gives each part's slice of the run axis.
    """

    def __init__(self, parts):
        parts = [(p, int(n)) for p, n in parts]
        if not parts or any(n < 1 for _, n in parts):
            raise InputError("StackedPrivatizer needs at least one (privatizer, runs >= 1) part")
        self.parts = parts
        edges = np.cumsum([0] + [n for _, n in parts])
        self.slices = [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
        self.runs = int(edges[-1])
        self.calibration = "mixed"

    def __repr__(self):
        return "StackedPrivatizer(" + ", ".join(f"{p!r} x {n}" for p, n in self.parts) + ")"

    def start(self, runs, H, S, A, K, rng, rewards=True):
        if runs != self.runs:
            raise InputError(f"StackedPrivatizer holds {self.runs} runs, started with runs={runs}")
        for (p, n), g in zip(self.parts, rng.spawn(len(self.parts))):
            p.start(n, H, S, A, K, g, rewards=rewards)
        self.width = np.concatenate([np.full(n, float(p.width)) for p, n in self.parts])
        return self

    def observe(self, states, actions, rewards=None):
        for (p, _), sl in zip(self.parts, self.slices):
            p.observe(states[sl], actions[sl], None if rewards is None else rewards[sl])

    def release(self):
        from dpcheck.algorithms.privatizers.base import CountPrivatizer, PrivateCounts
        from dpcheck.algorithms.privatizers.projection import _project, _sum_last
        # parts that use the base class's release (noise process, then the Section 5.1.1 LP) are
        # post-processed in ONE vectorised LP call over all their runs, with each run's own band
        # E/4 and shifts E/(2S), E/2 -- row by row exactly what CountPrivatizer.release computes;
        # any other part (NoPrivatizer, a user's class) releases through its own method.
        # Every field is written once into a preallocated (runs, ...) array (no concatenate of
        # per-part outputs); the LP runs on a view when the fast parts are contiguous in the run axis.
        fast = [isinstance(p, CountPrivatizer) and type(p).release is CountPrivatizer.release
                for p, _ in self.parts]
        fields = dict(visits=None, transitions=None, rewards=None, noisy_visits=None, noisy_transitions=None)
        have_rewards = True

        def put(name, sl, value):
            if value is None:
                return
            arr = fields[name]
            if arr is None:
                arr = fields[name] = np.empty((self.runs,) + np.shape(value)[1:])
            arr[sl] = value

        fast_runs = []
        for (p, n), sl, f in zip(self.parts, self.slices, fast):
            if f:
                nv, nt, rw = p._noisy_counts()
                put("noisy_visits", sl, nv)
                put("noisy_transitions", sl, nt)
                fast_runs.append(np.arange(sl.start, sl.stop))
            else:
                o = p.release()
                nv, nt, rw = o.noisy_visits, o.noisy_transitions, o.rewards
                for name in ("visits", "transitions", "noisy_visits", "noisy_transitions"):
                    put(name, sl, getattr(o, name))
            have_rewards = have_rewards and rw is not None
            if have_rewards:
                put("rewards", sl, rw)
        if fast_runs:
            idx = np.concatenate(fast_runs)
            block = slice(int(idx[0]), int(idx[-1]) + 1) if idx[-1] - idx[0] + 1 == idx.size else idx
            nv, nt = fields["noisy_visits"][block], fields["noisy_transitions"][block]
            Eb = self.width[block].reshape((-1,) + (1,) * (nv.ndim - 1))
            res = _project(nt, nv, Eb / 4.0, with_value=False)  # the release needs x, not t*
            S = nt.shape[-1]
            trans = res.counts + (Eb / (2.0 * S))[..., None]
            put("transitions", block, trans)
            put("visits", block, _sum_last(trans))
        return PrivateCounts(visits=fields["visits"], transitions=fields["transitions"],
                             rewards=fields["rewards"] if have_rewards else None,
                             noisy_visits=fields["noisy_visits"], noisy_transitions=fields["noisy_transitions"],
                             width=self.width)

    def true_counts(self):
        from dpcheck.algorithms.privatizers.base import TrueCounts
        outs = [p.true_counts() for p, _ in self.parts]
        rew = None if any(o.rewards is None for o in outs) else np.concatenate([o.rewards for o in outs])
        return TrueCounts(visits=np.concatenate([o.visits for o in outs]),
                          transitions=np.concatenate([o.transitions for o in outs]), rewards=rew)
