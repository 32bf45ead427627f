"""Count privatizers for tabular DP-RL (Qiao & Wang 2023, Section 5, Qiao & Wang 2024, Section 5, Qiao & Wang 2022, eq. 2).

CountPrivatizer (interface), CentralPrivatizer (JDP, tree mechanism), LocalPrivatizer (LDP),
NoPrivatizer (exact counts), the offline DP-APVI privatizers, the exact post-processing projection,
the binary mechanism, the widths E, and ``load_privatizer``.
"""
from dpcheck.algorithms.privatizers.base import CountPrivatizer, Declaration, PrivateCounts, TrueCounts, INTERFACE, declare_by_starting
from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism, TreeCounter, tree_levels
from dpcheck.algorithms.privatizers.central import CentralPrivatizer
from dpcheck.algorithms.privatizers.local import LocalPrivatizer, LocalMessage
from dpcheck.algorithms.privatizers.nonprivate import NoPrivatizer
from dpcheck.algorithms.privatizers.projection import project_counts, post_process, post_process_offline
from dpcheck.algorithms.privatizers.width import confidence_width
from dpcheck.algorithms.privatizers.loader import load_privatizer, load_offline_privatizer
from dpcheck.algorithms.privatizers.offline import (
    OfflineCountPrivatizer, OfflineGaussianPrivatizer, OfflineLaplacePrivatizer, OfflineCounts, dataset_counts,
)

__all__ = ["CountPrivatizer", "Declaration", "declare_by_starting", "PrivateCounts", "TrueCounts", "INTERFACE", "BinaryMechanism", "TreeCounter",
           "tree_levels", "CentralPrivatizer", "LocalPrivatizer", "LocalMessage", "NoPrivatizer",
           "project_counts", "post_process", "post_process_offline", "confidence_width", "load_privatizer",
           "OfflineCountPrivatizer", "load_offline_privatizer", "OfflineGaussianPrivatizer", "OfflineLaplacePrivatizer", "OfflineCounts", "dataset_counts"]
