"""The compiled numerical core of the Orr family: each operation once, each citing its
equation.

Layers, bottom up (a module imports only from those above it in this list):

==============  ===========================================================================
``_jit``        the compilation rule (numba, cached, no fastmath) and machine ε
``state``       the named records that hold every scalar of the objects below
``linalg``      in-place symmetric products, rank-one updates, swaps: loops, no mathematics
``basis``       column kind codes (defined once), radial profiles, rows of the design matrix
``statistics``  window statistics ``G = HᵀH``, ``c = Hᵀy``: rank-one, new column, refresh
``health``      rounding accounts and the measurements that decide whether S is kept
``updates``     the ridge state's exact operations (Orr A.4, A.8, A.11; FGCV App. V)
``criteria``    GCV / UEV, Orr A.11's optimal λⱼ, FGCV's candidate quantities r, γ, ξ, u
``selection``   the pruner's decisions: re-estimate / delete / add / trade, turn order
``pruning``     the pruner's evaluations with their moves carried out in place
``sample``      one sample of ``SparseRBFRegressor`` as calls to the above
==============  ===========================================================================

The Python objects (:mod:`onlinesparse.ridge`, :mod:`onlinesparse.window`,
:mod:`onlinesparse.pruner`, :mod:`onlinesparse.buffer`) validate and call these functions;
the package re-exports every public one, so ``core.add_basis`` is
:func:`onlinesparse.core.updates.add_basis`.
"""

from onlinesparse.core import pruning, state  # noqa: E402  (the stop codes, the records)
from onlinesparse.core._jit import (
    EPS,
)
from onlinesparse.core.basis import (
    CAUCHY,
    CONSTANT,
    GAUSSIAN,
    INVERSE_MULTIQUADRIC,
    LINEAR,
    MULTIQUADRIC,
    evaluate_rows,
    inner,
    nearest_sq_distance,
    predict_mean,
    profile,
    profile_array,
)
from onlinesparse.core.criteria import (
    CASES,
    basis_optima,
    basis_optimum,
    basis_quantities,
    candidate_optima,
    candidate_quantities,
    error_and_gamma,
    floored_optimum,
    gcv,
    gcv_of_delta,
    noise_estimate,
    optimal_lambda,
    training_error,
    uev,
)
from onlinesparse.core.health import (
    ACCOUNT_DRIFT,
    KEEP,
    REFRESH_AT,
    REFRESH_NOW,
    account,
    close_round,
    condition_bound,
    decide,
    drift,
    is_healthy,
    measured_estimate,
)
from onlinesparse.core.linalg import (
    mirror_lower,
    rank_one_update,
    swap_rows,
    swap_symmetric,
    symmetric_matvec,
    symmetric_matvec_pair,
)
from onlinesparse.core.pruning import (
    RELATIVE_GAIN,
    Ridge,
    Tracked,
    criteria_now,
    evaluate,
)
from onlinesparse.core.sample import (
    LEARNED,
    MOVE,
    QUIET,
    REFRESH,
    SLIDE_REFUSED,
    Z95,
    calibrate,
    consider,
    continue_sample,
    learn_pattern,
    noise_level,
    stream_sample,
    target_variance,
)
from onlinesparse.core.selection import (
    BASIS_FIRST,
    BASIS_MOVE,
    CANDIDATE_FIRST,
    CANDIDATE_MOVE,
    NO_MOVE,
    TURN_ORDER,
    basis_move,
    candidate_move,
    continued_order,
    evaluation_kind,
    lambda_min,
    least_useful,
    model_budget,
    proposes,
)
from onlinesparse.core.statistics import (
    cancellation_ratio,
    column_error,
    gram_rank_one,
    new_column,
    refresh_column,
    rolling_refresh,
    running_mean,
    swap_columns,
)
from onlinesparse.core.updates import (
    MIN_RELATIVE_DELTA,
    MIN_RESIDUAL_LEVERAGE,
    PROJECT_BELOW,
    add_basis,
    insert_column,
    lambda_rank_one,
    remove_basis,
    replace_basis,
    sherman_morrison,
    slide_window,
    symmetric_rank_one,
    without_basis,
)

__all__ = [
    "ACCOUNT_DRIFT",
    "BASIS_FIRST",
    "BASIS_MOVE",
    "CANDIDATE_FIRST",
    "CANDIDATE_MOVE",
    "CASES",
    "CAUCHY",
    "CONSTANT",
    "EPS",
    "GAUSSIAN",
    "INVERSE_MULTIQUADRIC",
    "KEEP",
    "LEARNED",
    "Z95",
    "calibrate",
    "noise_level",
    "target_variance",
    "LINEAR",
    "MIN_RELATIVE_DELTA",
    "MIN_RESIDUAL_LEVERAGE",
    "MOVE",
    "MULTIQUADRIC",
    "NO_MOVE",
    "PROJECT_BELOW",
    "QUIET",
    "REFRESH",
    "REFRESH_AT",
    "REFRESH_NOW",
    "RELATIVE_GAIN",
    "Ridge",
    "SLIDE_REFUSED",
    "TURN_ORDER",
    "Tracked",
    "account",
    "add_basis",
    "basis_move",
    "basis_optima",
    "basis_optimum",
    "basis_quantities",
    "cancellation_ratio",
    "candidate_move",
    "candidate_optima",
    "candidate_quantities",
    "close_round",
    "column_error",
    "condition_bound",
    "consider",
    "continue_sample",
    "continued_order",
    "criteria_now",
    "decide",
    "drift",
    "error_and_gamma",
    "evaluate",
    "evaluate_rows",
    "evaluation_kind",
    "floored_optimum",
    "gcv",
    "gcv_of_delta",
    "gram_rank_one",
    "inner",
    "insert_column",
    "is_healthy",
    "lambda_min",
    "lambda_rank_one",
    "learn_pattern",
    "least_useful",
    "measured_estimate",
    "mirror_lower",
    "model_budget",
    "nearest_sq_distance",
    "new_column",
    "noise_estimate",
    "optimal_lambda",
    "predict_mean",
    "profile",
    "profile_array",
    "proposes",
    "rank_one_update",
    "refresh_column",
    "remove_basis",
    "replace_basis",
    "rolling_refresh",
    "running_mean",
    "sherman_morrison",
    "slide_window",
    "stream_sample",
    "swap_columns",
    "swap_rows",
    "swap_symmetric",
    "symmetric_matvec",
    "symmetric_matvec_pair",
    "symmetric_rank_one",
    "training_error",
    "uev",
    "without_basis",
    "pruning",
    "state",
]
