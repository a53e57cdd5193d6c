"""Recurrent layers of oar.nn: SimpleRNN, LSTM and GRU, their cells, and the RNN/BiRNN wrappers.

Paddle's API, parameter names, shapes, gate orders and initialisation: a cell holds
``weight_ih [gates * hidden, input]``, ``weight_hh [gates * hidden, hidden]``, ``bias_ih`` and
``bias_hh``, all drawn from ``Uniform(-1/sqrt(hidden), 1/sqrt(hidden))``; a multi-layer network
exposes them as ``weight_ih_l{k}[_reverse]`` as well. Every step is composed from core ops, so
autograd differentiates through time and every backend runs it.

>>> import oar
>>> lstm = oar.nn.LSTM(16, 32, num_layers=2, direction="bidirect")
>>> out, (h, c) = lstm(oar.rand([4, 10, 16]))
>>> out.shape, h.shape, c.shape
([4, 10, 64], [4, 4, 32], [4, 4, 32])
"""

from __future__ import annotations

import math
from collections.abc import Callable

import oar
from oar.errors import ArgumentError, ShapeError
from oar.nn import functional as F
from oar.nn import initializer as I
from oar.nn.layer.container import LayerList
from oar.nn.layer.layers import Layer, size_arg
from oar.ops import Tensor, sigmoid

_BIDIRECTIONAL = ("bidirect", "bidirectional")


def _map(fn: Callable, *structures):
    """Apply ``fn`` leaf-wise over equally nested tuples/lists of tensors."""
    first = structures[0]
    if isinstance(first, (tuple, list)):
        return type(first)(_map(fn, *items) for items in zip(*structures))
    return fn(*structures)


def _flatten(structure) -> list:
    if isinstance(structure, (tuple, list)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _is_shape(shape) -> bool:
    return isinstance(shape, (tuple, list)) and all(isinstance(d, int) for d in shape)


def filled_for_batch(ref: Tensor, batch_dim: int, before: list, after: list, value: float, dtype) -> Tensor:
    """``full([*before, batch, *after], value)`` with ``batch`` taken from ``ref``'s dim
    ``batch_dim`` by ops, not read as a number: a program captured with a dynamic batch
    (``InputSpec([None, ...])``) keeps it dynamic instead of baking in the example's batch."""
    index = tuple(slice(None) if i == batch_dim else 0 for i in range(ref.ndim))
    per_sample = oar.full_like(ref[index], 0, dtype=dtype).reshape([1] * len(before) + [-1] + [1] * len(after))
    return per_sample + oar.full([*before, 1, *after], value, dtype=dtype)


class RNNCellBase(Layer):
    """Base class of RNN cells (Paddle's ``RNNCellBase``).

    A cell maps ``(inputs, states)`` of one time step to ``(outputs, new_states)``; ``RNN``
    runs it over a sequence. Subclasses define ``forward`` and ``state_shape``.
    """

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value: float = 0.0,
                           batch_dim_idx: int = 0):
        """States filled with ``init_value``, one per shape in ``shape`` (default
        ``state_shape``), each ``[batch, *shape]`` with the batch size read from ``batch_ref``.

        The dtype defaults to ``batch_ref``'s floating dtype (Paddle: the global default).
        """
        ref = _flatten(batch_ref)[0]
        shapes = self.state_shape if shape is None else shape
        if dtype is None:
            dtype = ref.dtype if ref.dtype.is_floating else oar.get_default_dtype()

        def build(s):
            if _is_shape(s):
                dims = [d for d in s if d != -1] if s and s[0] == -1 else list(s)
                return filled_for_batch(ref, batch_dim_idx, [], dims, init_value, dtype)
            return type(s)(build(item) for item in s)

        return build(shapes)

    @property
    def state_shape(self):
        """The shape (or nested shapes) of the states, without the batch dimension."""
        raise NotImplementedError(f"{type(self).__name__} must define state_shape to create its initial states")

    @property
    def state_dtype(self):
        raise NotImplementedError(f"{type(self).__name__} does not define state_dtype")

    # Built-in cells split their step into the input projection, done once for the whole
    # sequence by RNN (one large matmul instead of one per step), and the recurrent update.
    def _project(self, inputs: Tensor) -> Tensor:
        return oar.matmul(inputs, self.weight_ih, transpose_y=True) + self.bias_ih

    def _step(self, projected: Tensor, states):
        raise NotImplementedError

    def _create_weights(self, gates: int, input_size: int, hidden_size: int, recurrent_size: int,
                        weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr) -> None:
        input_size = size_arg(type(self).__name__, "input_size", input_size)
        hidden_size = size_arg(type(self).__name__, "hidden_size", hidden_size)
        std = 1.0 / math.sqrt(hidden_size)
        specs = (
            ("weight_ih", [gates * hidden_size, input_size], weight_ih_attr, False),
            ("weight_hh", [gates * hidden_size, recurrent_size], weight_hh_attr, False),
            ("bias_ih", [gates * hidden_size], bias_ih_attr, True),
            ("bias_hh", [gates * hidden_size], bias_hh_attr, True),
        )
        for name, shape, attr, is_bias in specs:
            if attr is False:
                # As Paddle: attr=False keeps the parameter, frozen at ones (weights) or zeros (biases).
                param = self.create_parameter(shape, None, is_bias=is_bias,
                                              default_initializer=I.Constant(0.0 if is_bias else 1.0))
                param.trainable = False
            else:
                param = self.create_parameter(shape, attr, is_bias=is_bias, default_initializer=I.Uniform(-std, std))
            setattr(self, name, param)
        self.input_size = input_size
        self.hidden_size = hidden_size

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


class SimpleRNNCell(RNNCellBase):
    """Elman cell: ``h = act(W_ih x + b_ih + W_hh h_prev + b_hh)``; ``act`` is "tanh" or "relu".

    ``forward(inputs [batch, input_size], states [batch, hidden_size] = zeros)`` returns
    ``(h, h)``.

    >>> import oar
    >>> cell = oar.nn.SimpleRNNCell(16, 32)
    >>> y, h = cell(oar.rand([4, 16]))
    >>> y.shape, cell.weight_ih.shape
    ([4, 32], [32, 16])
    """

    def __init__(self, input_size: int, hidden_size: int, activation: str = "tanh", weight_ih_attr=None,
                 weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__()
        if activation not in ("tanh", "relu"):
            raise ArgumentError(f"SimpleRNNCell: activation must be 'tanh' or 'relu', got {activation!r}")
        self._create_weights(1, input_size, hidden_size, hidden_size, weight_ih_attr, weight_hh_attr,
                             bias_ih_attr, bias_hh_attr)
        self.activation = activation

    def forward(self, inputs: Tensor, states: Tensor | None = None):
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        h = self._step(self._project(inputs), states)
        return h, h

    def _step(self, projected, h):
        z = projected + oar.matmul(h, self.weight_hh, transpose_y=True) + self.bias_hh
        return oar.tanh(z) if self.activation == "tanh" else F.relu(z)

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def extra_repr(self) -> str:
        act = "" if self.activation == "tanh" else f", activation={self.activation}"
        return f"{self.input_size}, {self.hidden_size}{act}"


class LSTMCell(RNNCellBase):
    """Long short-term memory cell with Paddle's gate order i, f, g (cell), o::

        i, f, g, o = split(W_ih x + b_ih + W_hh h_prev + b_hh, 4)
        c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g)
        h = sigmoid(o) * tanh(c)            # then h @ weight_ho when proj_size > 0

    ``forward(inputs, states=(h, c))`` returns ``(h, (h, c))``. With ``proj_size > 0`` the
    hidden state is projected by ``weight_ho [hidden_size, proj_size]`` and ``weight_hh`` is
    ``[4 * hidden_size, proj_size]``.

    >>> import oar
    >>> cell = oar.nn.LSTMCell(16, 32)
    >>> y, (h, c) = cell(oar.rand([4, 16]))
    >>> y.shape, c.shape, cell.weight_hh.shape
    ([4, 32], [4, 32], [128, 32])
    """

    def __init__(self, input_size: int, hidden_size: int, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, proj_size: int = 0, name=None):
        super().__init__()
        proj_size = size_arg("LSTMCell", "proj_size", proj_size, minimum=0)
        if proj_size and proj_size >= hidden_size:
            raise ArgumentError(f"LSTMCell: proj_size ({proj_size}) must be smaller than hidden_size ({hidden_size})")
        self._create_weights(4, input_size, hidden_size, proj_size or hidden_size, weight_ih_attr,
                             weight_hh_attr, bias_ih_attr, bias_hh_attr)
        self.proj_size = proj_size
        if proj_size:
            std = 1.0 / math.sqrt(hidden_size)
            self.weight_ho = self.create_parameter([hidden_size, proj_size], weight_hh_attr,
                                                   default_initializer=I.Uniform(-std, std))

    def forward(self, inputs: Tensor, states=None):
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        h, c = self._step(self._project(inputs), states)
        return h, (h, c)

    def _step(self, projected, states):
        h_prev, c_prev = states
        gates = projected + oar.matmul(h_prev, self.weight_hh, transpose_y=True) + self.bias_hh
        i, f, g, o = oar.split(gates, 4, axis=-1)
        c = sigmoid(f) * c_prev + sigmoid(i) * oar.tanh(g)
        h = sigmoid(o) * oar.tanh(c)
        if self.proj_size:
            h = oar.matmul(h, self.weight_ho)
        return h, c

    @property
    def state_shape(self):
        return ((self.proj_size or self.hidden_size,), (self.hidden_size,))

    def extra_repr(self) -> str:
        proj = f", proj_size={self.proj_size}" if self.proj_size else ""
        return f"{self.input_size}, {self.hidden_size}{proj}"


class GRUCell(RNNCellBase):
    """Gated recurrent unit with Paddle's formula (gate order r, z, c; the reset gate applies
    after the recurrent matmul, as cuDNN)::

        x_r, x_z, x_c = split(W_ih x + b_ih, 3);  h_r, h_z, h_c = split(W_hh h_prev + b_hh, 3)
        r = sigmoid(x_r + h_r);  z = sigmoid(x_z + h_z);  c = tanh(x_c + r * h_c)
        h = z * h_prev + (1 - z) * c

    >>> import oar
    >>> cell = oar.nn.GRUCell(16, 32)
    >>> y, h = cell(oar.rand([4, 16]))
    >>> y.shape, cell.weight_ih.shape
    ([4, 32], [96, 16])
    """

    def __init__(self, input_size: int, hidden_size: int, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__()
        self._create_weights(3, input_size, hidden_size, hidden_size, weight_ih_attr, weight_hh_attr,
                             bias_ih_attr, bias_hh_attr)

    def forward(self, inputs: Tensor, states: Tensor | None = None):
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        h = self._step(self._project(inputs), states)
        return h, h

    def _step(self, projected, h_prev):
        x_r, x_z, x_c = oar.split(projected, 3, axis=-1)
        h_r, h_z, h_c = oar.split(oar.matmul(h_prev, self.weight_hh, transpose_y=True) + self.bias_hh, 3, axis=-1)
        r = sigmoid(x_r + h_r)
        z = sigmoid(x_z + h_z)
        c = oar.tanh(x_c + r * h_c)
        return (h_prev - c) * z + c

    @property
    def state_shape(self):
        return (self.hidden_size,)


_BUILTIN_FORWARDS = {SimpleRNNCell.forward, LSTMCell.forward, GRUCell.forward}


def _sequence_masks(sequence_length, steps: int, dtype) -> tuple[list[Tensor], list[Tensor]]:
    """Per time step, ``keep [batch, 1]`` (1.0 inside the sequence) and ``hold = 1 - keep``."""
    lengths = sequence_length if isinstance(sequence_length, Tensor) else oar.to_tensor(sequence_length)
    if lengths.ndim != 1:
        raise ShapeError(f"RNN: sequence_length must be 1-D [batch_size], got shape {lengths.shape}")
    keep = oar.less_than(oar.arange(steps, dtype=lengths.dtype).unsqueeze(1), lengths.unsqueeze(0))
    keep = keep.astype(dtype).unsqueeze(-1)  # [time, batch, 1]
    return oar.unbind(keep, axis=0), oar.unbind(1.0 - keep, axis=0)


def _run(cell: RNNCellBase, inputs: Tensor, states, sequence_length=None, time_major: bool = False,
         is_reverse: bool = False, **kwargs):
    """Run ``cell`` over the time axis of ``inputs``: ``(outputs, final_states)`` (Paddle's ``rnn``).

    With ``sequence_length``, the states stop changing past each sequence's end, so the final
    states are those of its last valid step.
    """
    if inputs.ndim < 2:
        raise ShapeError(f"RNN: inputs must be [batch_size, time_steps, ...] (or time major), got shape {inputs.shape}")
    time_axis = 0 if time_major else 1
    steps = inputs.shape[time_axis]
    if steps == 0:
        raise ShapeError("RNN: inputs have no time steps")
    fused = (type(cell).forward in _BUILTIN_FORWARDS and not kwargs
             and not cell._forward_pre_hooks and not cell._forward_post_hooks)
    if fused:
        inputs = cell._project(inputs)
    step_inputs = oar.unbind(inputs, axis=time_axis)
    keep = hold = None
    if sequence_length is not None:
        keep, hold = _sequence_masks(sequence_length, steps, _flatten(states)[0].dtype)
    outputs: list = [None] * steps
    for t in (range(steps - 1, -1, -1) if is_reverse else range(steps)):
        if fused:
            new_states = cell._step(step_inputs[t], states)
            out = _flatten(new_states)[0]
        else:
            out, new_states = cell(step_inputs[t], states, **kwargs)
        if keep is not None:
            new_states = _map(lambda new, old, k=keep[t], h=hold[t]: new * k + old * h, new_states, states)
        states = new_states
        outputs[t] = out
    return _map(lambda *xs: oar.stack(list(xs), axis=time_axis), *outputs), states


class RNN(Layer):
    """Runs an RNN cell over a sequence (``paddle.nn.RNN``).

    ``forward(inputs, initial_states=None, sequence_length=None, **kwargs)`` takes
    ``[batch_size, time_steps, input_size]`` inputs (``[time_steps, batch_size, ...]`` with
    ``time_major=True``) and returns ``(outputs, final_states)``; ``initial_states`` default to
    the cell's zero states. With ``sequence_length`` ([batch_size] ints) the states stop at each
    sequence's end (outputs past it are computed but not masked, as Paddle's ``RNN``).

    >>> import oar
    >>> rnn = oar.nn.RNN(oar.nn.GRUCell(16, 32))
    >>> out, h = rnn(oar.rand([4, 23, 16]))
    >>> out.shape, h.shape
    ([4, 23, 32], [4, 32])
    """

    def __init__(self, cell: RNNCellBase, is_reverse: bool = False, time_major: bool = False):
        super().__init__()
        self.cell = cell
        self.is_reverse = is_reverse
        self.time_major = time_major

    def forward(self, inputs: Tensor, initial_states=None, sequence_length=None, **kwargs):
        if initial_states is None:
            initial_states = self.cell.get_initial_states(batch_ref=inputs, batch_dim_idx=1 if self.time_major else 0)
        return _run(self.cell, inputs, initial_states, sequence_length, self.time_major, self.is_reverse, **kwargs)


class BiRNN(Layer):
    """A forward and a backward RNN over the same inputs, outputs concatenated on the last axis
    (``paddle.nn.BiRNN``). ``forward(inputs, initial_states=None, sequence_length=None)``
    returns ``(outputs, (final_states_fw, final_states_bw))``.

    >>> import oar
    >>> birnn = oar.nn.BiRNN(oar.nn.LSTMCell(16, 32), oar.nn.LSTMCell(16, 32))
    >>> out, ((h_fw, c_fw), (h_bw, c_bw)) = birnn(oar.rand([2, 23, 16]))
    >>> out.shape, h_bw.shape
    ([2, 23, 64], [2, 32])
    """

    def __init__(self, cell_fw: RNNCellBase, cell_bw: RNNCellBase, time_major: bool = False):
        super().__init__()
        if getattr(cell_fw, "input_size", None) != getattr(cell_bw, "input_size", None):
            raise ArgumentError(f"BiRNN: the forward cell's input size ({getattr(cell_fw, 'input_size', None)}) "
                                f"differs from the backward cell's ({getattr(cell_bw, 'input_size', None)})")
        self.cell_fw = cell_fw
        self.cell_bw = cell_bw
        self.time_major = time_major

    def forward(self, inputs: Tensor, initial_states=None, sequence_length=None, **kwargs):
        batch_dim = 1 if self.time_major else 0
        if initial_states is None:
            initial_states = (self.cell_fw.get_initial_states(batch_ref=inputs, batch_dim_idx=batch_dim),
                              self.cell_bw.get_initial_states(batch_ref=inputs, batch_dim_idx=batch_dim))
        elif not isinstance(initial_states, (tuple, list)) or len(initial_states) != 2:
            raise ArgumentError("BiRNN: initial_states must be a pair (states_fw, states_bw)")
        states_fw, states_bw = initial_states
        out_fw, states_fw = _run(self.cell_fw, inputs, states_fw, sequence_length, self.time_major, False, **kwargs)
        out_bw, states_bw = _run(self.cell_bw, inputs, states_bw, sequence_length, self.time_major, True, **kwargs)
        return oar.concat([out_fw, out_bw], axis=-1), (states_fw, states_bw)


class RNNBase(LayerList):
    """The multi-layer, optionally bidirectional network behind SimpleRNN, LSTM and GRU.

    Sublayers are Paddle's: ``0``, ``1``, ... each an ``RNN`` (``.cell``) or a ``BiRNN``
    (``.cell_fw``/``.cell_bw``); their parameters are also this layer's ``weight_ih_l{k}``,
    ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (suffix ``_reverse`` for the backward
    direction, ``weight_ho_l{k}`` with ``proj_size``).

    ``forward(inputs, initial_states=None, sequence_length=None)`` returns ``(outputs,
    final_states)``: outputs ``[batch_size, time_steps, num_directions * hidden_size]``,
    states ``[num_layers * num_directions, batch_size, hidden_size]`` (a pair ``(h, c)`` for
    LSTM). ``dropout`` applies to the inputs of every layer but the first, in training. With
    ``sequence_length`` the outputs past each sequence's end are zero and the final states are
    those of its last valid step, as Paddle's fused ``rnn`` kernel.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 direction: str = "forward", time_major: bool = False, dropout: float = 0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
                 proj_size: int = 0):
        super().__init__()
        owner = type(self).__name__
        if direction not in ("forward", *_BIDIRECTIONAL):
            raise ArgumentError(f"{owner}: direction must be 'forward', 'bidirect' or 'bidirectional', got {direction!r}")
        input_size, hidden_size = size_arg(owner, "input_size", input_size), size_arg(owner, "hidden_size", hidden_size)
        num_layers = size_arg(owner, "num_layers", num_layers)
        proj_size = size_arg(owner, "proj_size", proj_size, minimum=0)
        dropout = F.common._probability(owner, dropout, "dropout")
        if proj_size and mode != "LSTM":
            raise ArgumentError(f"{owner}: proj_size is for LSTM only")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.direction = direction
        self.num_directions = 2 if direction in _BIDIRECTIONAL else 1
        self.time_major = time_major
        self.dropout = dropout
        self.proj_size = proj_size
        self.state_components = 2 if mode == "LSTM" else 1

        attrs = dict(weight_ih_attr=weight_ih_attr, weight_hh_attr=weight_hh_attr, bias_ih_attr=bias_ih_attr,
                     bias_hh_attr=bias_hh_attr)
        if mode == "LSTM":
            make = lambda size: LSTMCell(size, hidden_size, proj_size=proj_size, **attrs)  # noqa: E731
        elif mode == "GRU":
            make = lambda size: GRUCell(size, hidden_size, **attrs)  # noqa: E731
        elif mode in ("RNN_TANH", "RNN_RELU"):
            act = "tanh" if mode == "RNN_TANH" else "relu"
            make = lambda size: SimpleRNNCell(size, hidden_size, activation=act, **attrs)  # noqa: E731
        else:
            raise ArgumentError(f"{owner}: mode must be 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU', got {mode!r}")
        out_size = proj_size or hidden_size
        for layer in range(num_layers):
            size = input_size if layer == 0 else out_size * self.num_directions
            if self.num_directions == 1:
                self.append(RNN(make(size), False, time_major))
            else:
                self.append(BiRNN(make(size), make(size), time_major))
        # Paddle registers every cell parameter on the network too, under cuDNN-style names.
        for layer, sub in enumerate(self):
            cells = [sub.cell] if self.num_directions == 1 else [sub.cell_fw, sub.cell_bw]
            for suffix, cell in zip(("", "_reverse"), cells):
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_ho"):
                    if name in cell._parameters:
                        setattr(self, f"{name}_l{layer}{suffix}", cell._parameters[name])

    def flatten_parameters(self) -> None:
        """Kept for Paddle compatibility: oar keeps no cuDNN weight buffer, so there is nothing to do."""

    def _initial_states(self, inputs: Tensor, initial_states) -> list[list]:
        """Per state component, the list of ``[batch, size]`` states of each layer and direction."""
        owner = type(self).__name__
        batch = inputs.shape[1 if self.time_major else 0]
        count = self.num_layers * self.num_directions
        sizes = [self.proj_size or self.hidden_size, self.hidden_size][: self.state_components]
        if initial_states is None:
            batch_dim = 1 if self.time_major else 0
            components = [filled_for_batch(inputs, batch_dim, [count], [size], 0.0, inputs.dtype) for size in sizes]
        else:
            components = [initial_states] if isinstance(initial_states, Tensor) else list(initial_states)
            if len(components) != self.state_components:
                raise ArgumentError(f"{owner}: initial_states must be {'a pair (h, c)' if self.mode == 'LSTM' else 'one tensor'}, "
                                    f"got {len(components)} tensors")
            for label, state, size in zip(("h", "c"), components, sizes):
                if state.shape != [count, batch, size]:
                    raise ShapeError(f"{owner}: initial state {label} must be [num_layers * num_directions, batch_size, "
                                     f"{'proj_size' if size != self.hidden_size else 'hidden_size'}] = "
                                     f"{[count, batch, size]}, got {state.shape}")
        return [oar.unbind(c, axis=0) for c in components]

    def forward(self, inputs: Tensor, initial_states=None, sequence_length=None):
        owner = type(self).__name__
        if inputs.ndim != 3:
            layout = "[time_steps, batch_size, input_size]" if self.time_major else "[batch_size, time_steps, input_size]"
            raise ShapeError(f"{owner}: inputs must be 3-D {layout}, got shape {inputs.shape}")
        if inputs.shape[-1] != self.input_size:
            raise ShapeError(f"{owner}: inputs have {inputs.shape[-1]} features, the layer expects "
                             f"input_size={self.input_size}")
        per_state = self._initial_states(inputs, initial_states)

        def states_at(index):
            parts = tuple(component[index] for component in per_state)
            return parts if self.state_components == 2 else parts[0]

        finals = []
        outputs = inputs
        for layer, sub in enumerate(self):
            if layer > 0 and self.dropout > 0.0:
                outputs = F.dropout(outputs, self.dropout, training=self.training, mode="upscale_in_train")
            base = layer * self.num_directions
            if self.num_directions == 1:
                outputs, final = sub(outputs, states_at(base), sequence_length)
                finals.append(final)
            else:
                outputs, (final_fw, final_bw) = sub(outputs, (states_at(base), states_at(base + 1)), sequence_length)
                finals.extend([final_fw, final_bw])
        if sequence_length is not None:
            # Padded steps never change the states; zeroing their outputs once at the end
            # matches the fused kernel, which zeroes them in every layer.
            steps = inputs.shape[0 if self.time_major else 1]
            keep, _ = _sequence_masks(sequence_length, steps, outputs.dtype)
            outputs = outputs * oar.stack(keep, axis=0 if self.time_major else 1)
        if self.state_components == 1:
            return outputs, oar.stack(finals, axis=0)
        return outputs, tuple(oar.stack([f[i] for f in finals], axis=0) for i in range(2))

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.direction != "forward":
            text += f", direction={self.direction}"
        if self.time_major:
            text += ", time_major=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        return text


class SimpleRNN(RNNBase):
    """Multi-layer Elman network: ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``
    (``paddle.nn.SimpleRNN``); ``activation`` is "tanh" or "relu".

    >>> import oar
    >>> rnn = oar.nn.SimpleRNN(16, 32, num_layers=2)
    >>> out, h = rnn(oar.rand([4, 23, 16]))
    >>> out.shape, h.shape
    ([4, 23, 32], [2, 4, 32])
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, direction: str = "forward",
                 time_major: bool = False, dropout: float = 0.0, activation: str = "tanh", weight_ih_attr=None,
                 weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        if activation not in ("tanh", "relu"):
            raise ArgumentError(f"SimpleRNN: activation must be 'tanh' or 'relu', got {activation!r}")
        mode = "RNN_TANH" if activation == "tanh" else "RNN_RELU"
        super().__init__(mode, input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)
        self.activation = activation


class LSTM(RNNBase):
    """Multi-layer long short-term memory network (``paddle.nn.LSTM``), cells as ``LSTMCell``;
    states are a pair ``(h, c)``, each ``[num_layers * num_directions, batch_size, hidden_size]``
    (``h`` of size ``proj_size`` when it is set).

    >>> import oar
    >>> lstm = oar.nn.LSTM(16, 32, num_layers=2)
    >>> out, (h, c) = lstm(oar.rand([4, 23, 16]))
    >>> out.shape, h.shape, lstm.weight_ih_l0.shape
    ([4, 23, 32], [2, 4, 32], [128, 16])
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, direction: str = "forward",
                 time_major: bool = False, dropout: float = 0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, proj_size: int = 0, name=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, proj_size)


class GRU(RNNBase):
    """Multi-layer gated recurrent unit network (``paddle.nn.GRU``), cells as ``GRUCell``.

    >>> import oar
    >>> gru = oar.nn.GRU(16, 32, direction="bidirectional")
    >>> out, h = gru(oar.rand([4, 23, 16]))
    >>> out.shape, h.shape
    ([4, 23, 64], [2, 4, 32])
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, direction: str = "forward",
                 time_major: bool = False, dropout: float = 0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)


__all__ = ["RNNCellBase", "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "BiRNN", "SimpleRNN", "LSTM", "GRU"]

