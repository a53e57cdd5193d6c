"""``oar.metric``: Paddle's metrics (Accuracy, Precision, Recall, Auc) and ``accuracy``.

>>> import oar
>>> m = oar.metric.Accuracy(topk=(1, 2))
>>> correct = m.compute(oar.to_tensor([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3]]), oar.to_tensor([[2], [0]]))
>>> m.update(correct)
[0.5, 1.0]
>>> m.name()
['acc_top1', 'acc_top2']
"""

from oar.metric.metrics import Accuracy as Accuracy
from oar.metric.metrics import Auc as Auc
from oar.metric.metrics import Metric as Metric
from oar.metric.metrics import Precision as Precision
from oar.metric.metrics import Recall as Recall
from oar.metric.metrics import accuracy as accuracy

__all__ = ["Metric", "Accuracy", "Precision", "Recall", "Auc", "accuracy"]
