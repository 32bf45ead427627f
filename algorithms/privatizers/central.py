"""Central Privatizer for JDP (Qiao & Wang 2023, Section 5.1, Qiao & Wang 2024, Section 5.1).

Every count is a continual counter over the K users: for each (h,s,a) the visit stream, for each
(h,s,a,s') the transition stream and (DP-UCBVI only) for each (h,s,a) the reward stream. Each stream is
privatised by the binary mechanism with per-node Laplace scale

    b_c = F H L / eps            (paper;  F = 3 families for DP-UCBVI, 2 for DP-Nash-VI)
    b_c = 2 F H L / eps          (strict: replacement neighbours, docs/derivations.md#neighbouring-relation)

with L = floor(log2 K) + 1 (eps' = eps / (F H L) per node, docs/derivations.md#noise-calibration). ``N^_h^k = B(k-1)``; N~ comes from
the Section 5.1.1 LP with the central E (docs/derivations.md#widths-e); R~ is the tree output itself (no post-processing, docs/derivations.md#readings).

Privacy as data: in one family a user changes one unit per step h in each of the L nodes of the
counters she touches (add/remove: l1 change H L; replacement: 2 H L), so the family's noisy node vector
is ``LaplaceDpEvent(b_c / (H L n))`` (n = 1 add/remove, 2 replacement) and the privatizer is the
composition over the F families: eps with the matching calibration, 2 eps with "paper" under replacement.
All releases are post-processing of the noisy nodes; the Billboard lemma turns DP of the counts into
JDP of the actions (Lemma 5.1 of both papers).
"""
from __future__ import annotations

import functools

import numpy as np

from dpcheck.claims import Claim

from dpcheck.algorithms.privatizers.base import (CompiledNoise, CountPrivatizer, Declaration, PaperSources,
                                                 ScratchBuffer, _check_neighbouring)
from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism, TreeCounter, tree_levels
from dpcheck.algorithms.privatizers.width import confidence_width


class CentralPrivatizer(PaperSources, CountPrivatizer):
    """Tree-mechanism counts for eps-JDP (Qiao & Wang 2023, Lemma 5.1; Qiao & Wang 2024, Lemma 5.1)."""

    name = "central"
    notion = "JDP"
    SOURCES = {True: "Qiao & Wang 2023 (DP-UCBVI), Lemma 5.1: Central Privatizer is eps-JDP",
               False: "Qiao & Wang 2024 (DP-Nash-VI), Lemma 5.1: Central Privatizer is eps-JDP"}

    # -- calibration: the node scale is the one parameter both the noise and the declaration read ----
    def scale_for(self, H: int, K: int, families: int) -> float:
        """b_c = 1/eps' = F H L / eps (paper) or 2 F H L / eps (strict), L = tree_levels(K)."""
        return self.sensitivity_factor * families * H * tree_levels(K) / self.epsilon

    def tree_for(self, H: int, K: int, families: int, neighbouring: str = "replacement") -> TreeCounter:
        """The declared tree of ONE family: horizon K, node scale b_c, l1 sensitivity H L (x2 replacement)."""
        n = _check_neighbouring(neighbouring)
        return TreeCounter(horizon=K, node_scale=self.scale_for(H, K, families),
                           sensitivity=n * H * tree_levels(K), noise="laplace")

    def declare(self, H: int, S: int, A: int, K: int, rewards: bool = True, *, rng=None) -> Declaration:
        """F Laplace trees composed (F = 3 with rewards, 2 without), the eps-JDP claim, the central E."""
        if not self._declares_itself(CentralPrivatizer):
            return super().declare(H, S, A, K, rewards, rng=rng)
        return self._declaration(H, S, A, K, rewards, rng)

    def event_for(self, H: int, K: int, families: int, neighbouring: str = "replacement"):
        """The DpEvent of the noisy nodes: one tree per family, composed over the F families."""
        import dp_accounting
        return dp_accounting.ComposedDpEvent([self.tree_for(H, K, families, neighbouring).dp_event()] * families)

    def _declaration(self, H, S, A, K, rewards, rng) -> Declaration:
        families = 3 if rewards else 2
        event = functools.partial(self.event_for, H, K, families)
        b = self.scale_for(H, K, families)
        width = None if self.width_mode == "calibrated" and rng is None else self.width_for(H, S, A, K, rewards, b, rng)
        claim = Claim(epsilon=self.epsilon, notion="JDP", source=self.source_for(rewards), neighbouring="replacement")
        return Declaration(claim=claim, width=width, event=event, scale=b,
                           sensitivity=self.tree_for(H, K, families).sensitivity)

    # -- the started privatizer: the same functions at its own sizes ---------------------------------
    def node_scale(self) -> float:
        """b_c at the started sizes (:meth:`scale_for`)."""
        self._require_started()
        return self.scale_for(self.H, self.K, self.families)

    @property
    def levels(self) -> int:
        return tree_levels(self.K)

    def tree(self, neighbouring: str = "replacement") -> TreeCounter:
        """:meth:`tree_for` at the started sizes, with the scale of :meth:`node_scale`."""
        n = _check_neighbouring(neighbouring)
        return TreeCounter(horizon=self.K, node_scale=self.node_scale(),
                           sensitivity=n * self.H * self.levels, noise="laplace")

    def dp_event(self, neighbouring: str = "replacement"):
        import dp_accounting
        return dp_accounting.ComposedDpEvent([self.tree(neighbouring).dp_event()] * self.families)

    @property
    def claim(self) -> Claim:
        return Claim(epsilon=self.epsilon, notion="JDP", source=self.source, neighbouring="replacement")

    # -- noise ---------------------------------------------------------------------------------------
    def _sizes(self):
        HSA = self.H * self.S * self.A
        return HSA, HSA * self.S, (HSA if self.rewards else 0)

    def _start_noise(self, rng):
        nv, nt, nr = self._sizes()
        # all families share one batch of counters so each step draws one noise array (runs, C)
        self._tree = BinaryMechanism(self.tree(), (self.runs, nv + nt + nr), rng)

    @property
    def mechanism(self) -> BinaryMechanism:
        """The running tree of all families (one batch of counters, item layout per run: visits
        (HSA) | transitions (HSAS) | rewards (HSA)); its noise is ``mechanism.counter.noise``."""
        self._require_started()
        return self._tree

    def compiled_noise(self) -> CompiledNoise | None:
        """The "tree" process: each episode completes one node of the Laplace tree, whose noise is drawn
        by the tree's own counter from the tree's own stream (:meth:`TreeCounter.draw`), as ``observe``
        draws it. None for a subclass that changes any of it (the Python path runs it)."""
        self._require_started()
        if not self._runs_as(CentralPrivatizer) or type(self._tree) is not BinaryMechanism:
            return None
        counter, rng, scratch = self._tree.counter, self._tree.rng, ScratchBuffer()

        def draw(out):
            buf = out if out.flags.c_contiguous else scratch.get(out.shape)
            counter.draw(rng, out.shape, out=buf)
            if buf is not out:
                out[...] = buf
        return CompiledNoise("tree", draw)

    def _export_noise(self) -> dict:
        return {"tree": self._tree.export_state()}

    def _import_noise(self, state: dict) -> None:
        self._tree.import_state(state["tree"])

    def _ingest(self, visits, transitions, rewards):
        parts = [visits.reshape(self.runs, -1), transitions.reshape(self.runs, -1)]
        if self.rewards:
            parts.append(rewards.reshape(self.runs, -1))
        self._tree.step(np.concatenate(parts, axis=1))

    def _ingest_sparse(self, sa, sas, rewards) -> bool:
        # the same tree step as _ingest without the dense (runs, C) item, when nothing is overridden
        if type(self)._ingest is not CentralPrivatizer._ingest or type(self._tree).step is not BinaryMechanism.step:
            return False
        nv, nt, nr = self._sizes()
        C = nv + nt + nr
        run = np.arange(self.runs, dtype=np.int64).repeat(self.H)
        # item layout per run: [visits (HSA) | transitions (HSAS) | rewards (HSA)]
        parts = [run * C + (sa - run * nv), run * C + nv + (sas - run * nt)]
        values = [np.ones(sa.size), np.ones(sa.size)]
        if self.rewards:
            parts.append(run * C + nv + nt + (sa - run * nv))
            values.append(rewards)
        self._tree.step_sparse(np.concatenate(parts), np.concatenate(values))
        return True

    def _noisy_counts(self):
        nv, nt, nr = self._sizes()
        B = self._tree.release()
        shape = (self.runs, self.H, self.S, self.A)
        visits = B[:, :nv].reshape(shape)
        trans = B[:, nv:nv + nt].reshape(shape + (self.S,))
        rew = B[:, nv + nt:].reshape(shape) if self.rewards else None
        return visits, trans, rew

    def width_for(self, H: int, S: int, A: int, K: int, rewards: bool, scale: float, rng=None) -> float:
        """The central E for node scale ``scale`` (width.py; ``rng`` for the calibrated mode only)."""
        return confidence_width("central", self.width_mode, H=H, S=S, A=A, K=K, scale=scale, epsilon=self.epsilon,
                                beta=self.beta, rewards=rewards, rng=rng)

    def _compute_width(self) -> float:
        return self.width_for(self.H, self.S, self.A, self.K, self.rewards, self.node_scale(), self._width_rng())

    def _width_rng(self):
        # the calibrated width simulates noise from a child stream, so the privatizer's own noise
        # stream is the same in every width mode
        return self.rng.spawn(1)[0] if self.width_mode == "calibrated" else None
