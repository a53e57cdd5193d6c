"""Quanters: layers that simulate quantization in training, with straight-through gradients."""

from .abs_max import (
    FakeQuanterChannelWiseAbsMaxObserver,
    FakeQuanterChannelWiseAbsMaxObserverLayer,
    FakeQuanterWithAbsMaxObserver,
    FakeQuanterWithAbsMaxObserverLayer,
)

__all__ = ["FakeQuanterWithAbsMaxObserver", "FakeQuanterChannelWiseAbsMaxObserver",
           "FakeQuanterWithAbsMaxObserverLayer", "FakeQuanterChannelWiseAbsMaxObserverLayer"]
