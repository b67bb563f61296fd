"""The compiled numerical core of the Orr family: each operation once, each citing its
equation.

Layers, bottom up (a module imports only from those above it in this list):

==============  ===========================================================================
``_jit``        the compilation rule (numba, cached, no fastmath) and machine ε
``linalg``      in-place symmetric products, rank-one updates, swaps: loops, no mathematics
``basis``       column kind codes (defined once), radial profiles, rows of the design matrix
``statistics``  window statistics ``G = HᵀH``, ``c = Hᵀy``: rank-one, new column, refresh
``health``      rounding accounts and the measurements that decide whether S is kept
``updates``     the ridge state's exact operations (Orr A.4, A.8, A.11; FGCV App. V)
``criteria``    GCV / UEV, Orr A.11's optimal λⱼ, FGCV's candidate quantities r, γ, ξ, u
``selection``   the pruner's decisions: re-estimate / delete / add / trade, turn order
``sample``      one sample of ``SparseRBFRegressor`` as calls to the above
==============  ===========================================================================

The Python objects (:mod:`onlinesparse.ridge`, :mod:`onlinesparse.window`,
:mod:`onlinesparse.pruner`, :mod:`onlinesparse.buffer`) validate and call these functions;
the package re-exports every public one, so ``core.add_basis`` is
:func:`onlinesparse.core.updates.add_basis`.
"""

from onlinesparse.core._jit import EPS
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
    account,
    condition_bound,
    drift,
    is_healthy,
    measured_estimate,
    settle,
)
from onlinesparse.core.linalg import (
    mirror_lower,
    rank_one_update,
    swap_rows,
    swap_symmetric,
    symmetric_matvec,
    symmetric_matvec_pair,
)
from onlinesparse.core.sample import (
    DECIDE,
    MOVE,
    QUIET,
    SAMPLE_RECORD,
    SLIDE_REFUSED,
    account_move,
    new_record,
    stream_sample,
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
    "column_error",
    "insert_column",
    "without_basis",
    "account",
    "noise_estimate",
    "proposes",
    "lambda_min",
    "evaluation_kind",
    "continued_order",
    "NO_MOVE",
    "CANDIDATE_MOVE",
    "BASIS_MOVE",
    "EPS",
    "CAUCHY",
    "CONSTANT",
    "GAUSSIAN",
    "INVERSE_MULTIQUADRIC",
    "LINEAR",
    "MULTIQUADRIC",
    "evaluate_rows",
    "inner",
    "nearest_sq_distance",
    "predict_mean",
    "profile",
    "profile_array",
    "CASES",
    "basis_optima",
    "basis_optimum",
    "basis_quantities",
    "candidate_optima",
    "candidate_quantities",
    "error_and_gamma",
    "floored_optimum",
    "gcv",
    "gcv_of_delta",
    "optimal_lambda",
    "training_error",
    "uev",
    "condition_bound",
    "drift",
    "is_healthy",
    "measured_estimate",
    "settle",
    "mirror_lower",
    "rank_one_update",
    "swap_rows",
    "swap_symmetric",
    "symmetric_matvec",
    "symmetric_matvec_pair",
    "DECIDE",
    "MOVE",
    "QUIET",
    "SAMPLE_RECORD",
    "SLIDE_REFUSED",
    "account_move",
    "new_record",
    "stream_sample",
    "BASIS_FIRST",
    "CANDIDATE_FIRST",
    "TURN_ORDER",
    "basis_move",
    "candidate_move",
    "least_useful",
    "model_budget",
    "cancellation_ratio",
    "gram_rank_one",
    "new_column",
    "refresh_column",
    "rolling_refresh",
    "running_mean",
    "swap_columns",
    "add_basis",
    "lambda_rank_one",
    "remove_basis",
    "replace_basis",
    "sherman_morrison",
    "slide_window",
    "symmetric_rank_one",
]
