"""WiCkeD: replace one uniformly chosen option with "None of the above" (the builder is :mod:`.builder`)."""

from .builder import BUILDER, Options, build
from .card_statistics import statistics
from .checks import CHECKS
from .evaluation import evaluation_table
from .sba import SBADecisions, SBAVerdict, labelled_shares, sba_key
from .transform import skip_reason, variant_step, wicked_variant

main, build_dataset = BUILDER.main, BUILDER.build_dataset

__all__ = ["BUILDER", "CHECKS", "Options", "SBADecisions", "SBAVerdict", "build", "build_dataset", "evaluation_table",
           "labelled_shares", "main", "sba_key", "skip_reason", "statistics", "variant_step", "wicked_variant"]
