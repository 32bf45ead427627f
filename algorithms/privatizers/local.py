"""Local Privatizer for LDP (Qiao & Wang 2023, Section 5.2, Qiao & Wang 2024, Section 5.2).

Each user perturbs her own per-trajectory statistics -- the one-hot visit vector sigma_h(s,a), the one-hot
transition vector sigma_h(s,a,s') and (DP-UCBVI) the reward vector rho_h(s,a) -- with fresh i.i.d.
Laplace noise on EVERY coordinate, zeros included (docs/derivations.md#noise-calibration), and sends only that message. The agent
sums the messages (N^ = sum of sigma~, R~ = sum of rho~) and applies the Section 5.1.1 LP with the local E.

Scale b_l = F H / eps (paper; F = 3 families for DP-UCBVI, 2 for DP-Nash-VI) or 2 F H / eps (strict,
replacement). Privacy as data: one family of one message is the Laplace mechanism with l1 sensitivity H
(add/remove) or 2 H (replacement; two trajectories differ in two one-hot entries per step), so
``dp_event()`` composes F events ``LaplaceDpEvent(b_l / (n H))`` (Lemma 5.6 / Lemma 5.4 of the papers).
"""
from __future__ import annotations

import functools

from dataclasses import dataclass

import numpy as np

from dpcheck.claims import Claim

from dpcheck.algorithms.privatizers.base import (CompiledNoise, CountPrivatizer, Declaration, PaperSources,
                                                 ScratchBuffer, _check_neighbouring, episode_increments, flatten_counts)
from dpcheck.algorithms.privatizers.width import confidence_width
from dpcheck.algorithms.privatizers.noise import laplace


@dataclass(frozen=True)
class LocalMessage:
    """Exactly what one user sends (per run): sigma~ (runs,H,S,A), sigma~' (runs,H,S,A,S), rho~ or None."""

    visits: np.ndarray
    transitions: np.ndarray
    rewards: np.ndarray | None

    def flat(self) -> np.ndarray:
        """The message as one vector per run (runs, H S A + H S^2 A [+ H S A])."""
        return flatten_counts(self.visits, self.transitions, self.rewards)


class LocalPrivatizer(PaperSources, CountPrivatizer):
    """Laplace local randomiser for eps-LDP (Qiao & Wang 2023, Lemma 5.6; Qiao & Wang 2024, Lemma 5.4)."""

    name = "local"
    notion = "LDP"
    SOURCES = {True: "Qiao & Wang 2023 (DP-UCBVI), Lemma 5.6: Local Privatizer is eps-LDP",
               False: "Qiao & Wang 2024 (DP-Nash-VI), Lemma 5.4: Local Privatizer is eps-LDP"}

    # -- calibration: the scale b_l is the one parameter both the noise and the declaration read -----
    def scale_for(self, H: int, families: int) -> float:
        """b_l = F H / eps (paper) or 2 F H / eps (strict)."""
        return self.sensitivity_factor * families * H / self.epsilon

    @staticmethod
    def event_for(scale: float, H: int, families: int, neighbouring: str = "replacement"):
        """F Laplace mechanisms of l1 sensitivity n H (n = 2 replacement, 1 add/remove), composed."""
        import dp_accounting
        n = _check_neighbouring(neighbouring)
        fam = dp_accounting.LaplaceDpEvent(noise_multiplier=scale / (n * H))
        return dp_accounting.ComposedDpEvent([fam] * families)

    def width_for(self, H: int, S: int, A: int, K: int, rewards: bool, scale: float, rng=None) -> float:
        """The local E for scale ``scale`` (width.py; ``rng`` for the calibrated mode only)."""
        return confidence_width("local", self.width_mode, H=H, S=S, A=A, K=K, scale=scale, epsilon=self.epsilon,
                                beta=self.beta, rewards=rewards, rng=rng)

    def declare(self, H: int, S: int, A: int, K: int, rewards: bool = True, *, rng=None) -> Declaration:
        """F Laplace randomisers composed (F = 3 with rewards, 2 without), the eps-LDP claim, the local E."""
        if not self._declares_itself(LocalPrivatizer):
            return super().declare(H, S, A, K, rewards, rng=rng)
        families = 3 if rewards else 2
        b = self.scale_for(H, families)
        width = None if self.width_mode == "calibrated" and rng is None else self.width_for(H, S, A, K, rewards, b, rng)
        claim = Claim(epsilon=self.epsilon, notion="LDP", source=self.source_for(rewards), neighbouring="replacement")
        return Declaration(claim=claim, width=width, event=functools.partial(self.event_for, b, H, families),
                           scale=b, sensitivity=2.0 * H)

    # -- the started privatizer: the same functions at its own sizes ---------------------------------
    def noise_scale(self) -> float:
        """b_l at the started sizes (:meth:`scale_for`)."""
        self._require_started()
        return self.scale_for(self.H, self.families)

    def dp_event(self, neighbouring: str = "replacement"):
        return self.event_for(self.noise_scale(), self.H, self.families, neighbouring)

    @property
    def claim(self) -> Claim:
        return Claim(epsilon=self.epsilon, notion="LDP", source=self.source, neighbouring="replacement")

    def message(self, states, actions, rewards, rng: np.random.Generator) -> LocalMessage:
        """What one user (per run) sends: her statistics plus Lap(b_l) on every coordinate.

        states (runs, H+1), actions (runs, H), rewards (runs, H) or None; noise from ``rng`` only.
        """
        self._require_started()
        v, t, r = episode_increments(states, actions, rewards, self.S, self.A, self.rewards)
        wv, wt, wr = self._split(self.message_noise(rng, v.shape[0])[0], v.shape[0])
        return LocalMessage(v + wv, t + wt, None if r is None else r + wr)

    # -- noise: the one place it is drawn (message, observe and the compiled engine) -----------------
    def message_noise(self, rng: np.random.Generator, runs: int, n: int = 1, out=None) -> np.ndarray:
        """Lap(b_l) noise of the next ``n`` messages of ``runs`` runs, (n, runs C_f) in the order ``rng``
        is consumed: per message the visits (runs,H,S,A), then the transitions (runs,H,S,A,S), then the
        rewards (runs,H,S,A) if the privatizer has them (C_f = H S A (S + 1 or 2)); into ``out`` if given.
        ``n`` at once are exactly ``n`` successive messages' noises (noise.laplace draws in C order)."""
        HSA = self.H * self.S * self.A
        per_run = HSA * (self.S + (2 if self.rewards else 1))
        return laplace(rng, self.noise_scale(), (n, runs * per_run), out=out)

    def _split(self, flat, runs):
        """One message's noise (runs C_f,) -> visits, transitions, rewards (views, or None)."""
        shape = (runs, self.H, self.S, self.A)
        nv = runs * self.H * self.S * self.A
        nt = nv * self.S
        return (flat[:nv].reshape(shape), flat[nv:nv + nt].reshape(shape + (self.S,)),
                flat[nv + nt:].reshape(shape) if self.rewards else None)

    def compiled_noise(self) -> CompiledNoise | None:
        """The "sum" process: every episode's message noise (:meth:`message_noise`), rearranged from
        the stream's family-major order into the per-run counter layout. None without reward streams or
        for a subclass that changes any of it (the Python path runs it)."""
        self._require_started()
        if not self.rewards or not self._runs_as(LocalPrivatizer):
            return None
        rng, scratch = self.rng, ScratchBuffer()
        HSA, HSAS = self.H * self.S * self.A, self.H * self.S * self.A * self.S

        def draw(out):
            n, m, C = out.shape
            flat = self.message_noise(rng, m, n, out=scratch.get((n, m * C)))
            out[:, :, :HSA] = flat[:, :m * HSA].reshape(n, m, HSA)
            out[:, :, HSA:HSA + HSAS] = flat[:, m * HSA:m * (HSA + HSAS)].reshape(n, m, HSAS)
            out[:, :, HSA + HSAS:] = flat[:, m * (HSA + HSAS):].reshape(n, m, HSA)
        return CompiledNoise("sum", draw)

    # the base class computes the increments for the true counts; the message is built from the
    # same trajectory inside observe(), so override observe to send exactly message(...)
    def observe(self, states, actions, rewards=None) -> None:
        self._pending = (states, actions, rewards)
        super().observe(states, actions, rewards)

    def _start_noise(self, rng):
        shape = (self.runs, self.H, self.S, self.A)
        self._sum_v = np.zeros(shape)
        self._sum_t = np.zeros(shape + (self.S,))
        self._sum_r = np.zeros(shape) if self.rewards else None

    def _export_noise(self) -> dict:
        """The running sums of the users' noisy messages (what release() post-processes)."""
        return {"noisy_visits": self._sum_v.copy(), "noisy_transitions": self._sum_t.copy(),
                "noisy_rewards": None if self._sum_r is None else self._sum_r.copy()}

    def _import_noise(self, state: dict) -> None:
        self._sum_v[...] = state["noisy_visits"]
        self._sum_t[...] = state["noisy_transitions"]
        if self._sum_r is not None:
            self._sum_r[...] = state["noisy_rewards"]
        self._pending = None

    def _ingest(self, visits, transitions, rewards):
        msg = self.message(*self._pending, rng=self.rng)
        self._pending = None
        self._sum_v += msg.visits
        self._sum_t += msg.transitions
        if self.rewards:
            self._sum_r += msg.rewards

    def _ingest_sparse(self, sa, sas, rewards) -> bool:
        # message(...) without the dense one-hot arrays: the same three noise draws in the same
        # order, the one-hot 1s (and rewards) added at their indices (noise + 0 elsewhere is exact)
        if type(self)._ingest is not LocalPrivatizer._ingest or type(self).message is not LocalPrivatizer.message:
            return False
        self._pending = None
        v, t, r = self._split(self.message_noise(self.rng, self.runs)[0], self.runs)
        v.reshape(-1)[sa] += 1.0
        t.reshape(-1)[sas] += 1.0
        self._sum_v += v
        self._sum_t += t
        if self.rewards:
            r.reshape(-1)[sa] += rewards
            self._sum_r += r
        return True

    def _noisy_counts(self):
        return (self._sum_v.copy(), self._sum_t.copy(),
                None if self._sum_r is None else self._sum_r.copy())

    def _compute_width(self) -> float:
        rng = self.rng.spawn(1)[0] if self.width_mode == "calibrated" else None
        return self.width_for(self.H, self.S, self.A, self.K, self.rewards, self.noise_scale(), rng)
