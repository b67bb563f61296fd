"""The stream layer: what every family needs to be right on a stream, written once.

Each mechanism is a small named record and a pure compiled step that needs only a
prediction, its variance and the target — or, for memory and concepts, a small protocol the
model implements (:class:`~onlinesparse.stream.memory.Forgetful`: ``n_stored``,
``n_parameters``, ``forget_oldest(k)``, optionally ``ridge_view()``; a ``freeze()`` that
returns a :class:`~onlinesparse.stream.concepts.Predictor`):

==================  ========================================================================
``evidence``        one log-likelihood ratio (Gaussian or Student-t) and one bounded,
                    optionally forgetting, log-odds accumulator
``mixture``         the mean and variance of a mixture of predictive distributions
``calibration``     the interval's calibration to one ``coverage`` (adaptive conformal)
``change``          CUSUM change detection on the errors, whitened by their persistence;
                    the noise hold
``baseline``        the running mean and the last target as experts, weighed by the evidence
``level``           the errors' wandering level: local-level Kalman filters, mixed
``prior``           the prediction returned toward the targets' mean where the model
                    knows little
``layer``           the records as one bundle (:class:`Stream`), the per-sample
                    :func:`observe` and the composed :func:`predictive`
``memory``          adaptive memory: where a change cuts the memory, how long it may regrow,
                    which samples a full memory holds
``refit``           whether an alarm is worth a cut: the memory after the change refitted
                    against the full one with a level shift (a model's ``RidgeView``)
``concepts``        the models a change ended, kept frozen, weighed by their evidence
``wrapper``         a river wrapper that gives the layer to any onlinesparse regressor
==================  ========================================================================

Nothing here imports a model family; the families import this.
"""

from onlinesparse.stream.concepts import ConceptMemory
from onlinesparse.stream.layer import Stream, StreamLayer, observe, predictive
from onlinesparse.stream.memory import AdaptiveMemory, Horizon
from onlinesparse.stream.wrapper import StreamRegressor

__all__ = ["AdaptiveMemory", "ConceptMemory", "Horizon", "Stream", "StreamLayer", "StreamRegressor",
           "observe", "predictive"]
