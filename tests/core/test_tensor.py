"""The Tensor object: creation, properties, conversions, printing, copies, devices."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DeviceError, DTypeError, GradientError


# -- to_tensor dtypes, as Paddle -----------------------------------------------------------------
@pytest.mark.parametrize(
    "data, dtype",
    [
        (1.5, "float32"),
        ([1.0, 2.0], "float32"),
        ([[1, 2], [3, 4]], "int64"),
        (7, "int64"),
        (True, "bool"),
        ([True, False], "bool"),
        (np.zeros(3), "float64"),  # a numpy array keeps its dtype
        (np.zeros(3, np.float16), "float16"),
        (np.arange(3, dtype=np.int32), "int32"),
        (np.float64(2.5), "float64"),  # so does a numpy scalar
        (np.int32(3), "int32"),
        ([np.float64(1.0), 2.0], "float32"),  # a list is Python data: the default dtype
    ],
)
def test_to_tensor_infers_dtypes_as_paddle(data, dtype):
    t = oar.to_tensor(data)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(data))
    assert t.stop_gradient


def test_to_tensor_with_a_dtype_and_from_a_tensor():
    t = oar.to_tensor([1, 2], dtype="float64")
    assert t.dtype == oar.float64
    assert oar.to_tensor([1.5], dtype=oar.bfloat16).dtype == "bfloat16"
    src = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    copied = oar.to_tensor(src)
    assert copied.dtype == oar.float32 and copied.stop_gradient  # a new leaf, as Paddle
    assert not np.shares_memory(copied.numpy(copy=False), src.numpy(copy=False))
    assert oar.to_tensor(src, dtype="int32").tolist() == [1, 2]
    assert oar.to_tensor(np.float32(1.0), dtype="float16").dtype == oar.float16


def test_to_tensor_copies_numpy_input():
    a = np.array([1.0, 2.0])
    t = oar.to_tensor(a)
    a[0] = 100.0
    assert t.tolist() == [1.0, 2.0]


def test_tensor_constructor():
    t = oar.Tensor(np.array([1, 2], np.int32))
    assert t.dtype == "int32" and t.shape == [2]
    assert oar.Tensor().shape == [0]


def test_set_default_dtype_changes_what_python_floats_become():
    assert oar.get_default_dtype() == "float32"
    oar.set_default_dtype("float64")
    try:
        assert oar.to_tensor(1.5).dtype == oar.float64
        assert oar.to_tensor([1, 2]).dtype == oar.int64  # ints are unaffected
        assert oar.to_tensor(np.zeros(2, np.float32)).dtype == oar.float32
    finally:
        oar.set_default_dtype("float32")
    assert oar.to_tensor(1.5).dtype == oar.float32
    with pytest.raises(DTypeError, match="floating"):
        oar.set_default_dtype("int32")


# -- properties ---------------------------------------------------------------------------------
def test_shape_ndim_size_numel():
    t = oar.to_tensor(np.zeros((2, 3, 4)))
    assert t.shape == [2, 3, 4] and isinstance(t.shape, list)
    assert t.ndim == 3 and t.dim() == 3 and t.ndimension() == 3
    assert t.size == 24 and isinstance(t.size, int)
    n = t.numel()  # a 0-d int64 tensor in Paddle
    assert isinstance(n, oar.Tensor) and n.shape == [] and n.dtype == oar.int64 and int(n) == 24
    scalar = oar.to_tensor(3.0)
    assert scalar.shape == [] and scalar.ndim == 0 and scalar.size == 1


def test_place():
    t = oar.to_tensor([1.0], place="cpu")
    assert t.place == oar.CPUPlace()
    assert t.place.is_cpu_place() and not t.place.is_gpu_place()
    assert repr(t.place) == "Place(cpu)"
    assert oar.to_tensor([1.0], place=oar.CPUPlace()).place == oar.CPUPlace()
    assert oar.CUDAPlace(0) != oar.CPUPlace()


def test_dtype_equality_with_strings_and_oar_dtypes():
    t = oar.to_tensor([1.0])
    assert t.dtype == "float32" and t.dtype == oar.float32 and t.dtype == "paddle.float32"
    assert t.dtype != "float64" and t.dtype != oar.float64
    assert oar.to_tensor([True]).dtype == oar.bool
    assert str(t.dtype) == "oar.float32" and t.dtype.name == "float32"


def test_name_is_unique_and_settable():
    a, b = oar.to_tensor([1.0]), oar.to_tensor([1.0])
    assert a.name != b.name and a.name.startswith("generated_tensor_")
    a.name = "weights"
    assert a.name == "weights"


def test_grad_setter_checks_the_shape():
    t = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    t.grad = oar.ones([2])
    assert t.grad.tolist() == [1.0, 1.0]
    assert t.gradient().tolist() == [1.0, 1.0]
    with pytest.raises(ArgumentError, match=r"shape \[3\].*shape \[2\]"):
        t.grad = oar.ones([3])


# -- conversions --------------------------------------------------------------------------------
def test_astype_and_to():
    t = oar.to_tensor([1.7, -1.2])
    assert t.astype("int32").tolist() == [1, -1]
    assert t.astype(oar.float64).dtype == oar.float64
    assert t.to("float64").dtype == oar.float64
    assert t.to("cpu") is t and t.cpu() is t


def test_item_tolist_and_python_conversions():
    t = oar.to_tensor([[1.5, 2.0], [3.0, 4.0]])
    assert t.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert t.item(0, 1) == 2.0
    s = oar.to_tensor(2.5)
    assert s.item() == 2.5 and isinstance(s.item(), float)
    assert float(s) == 2.5 and int(oar.to_tensor(7)) == 7
    assert bool(oar.to_tensor([True])) is True and bool(oar.to_tensor(0.0)) is False
    assert oar.to_tensor([1.5], dtype="bfloat16").tolist() == [1.5]
    assert f"{s:.3f}" == "2.500"
    assert [0, 1, 2][oar.to_tensor(1)] == 1  # integer tensors index Python sequences
    with pytest.raises(ArgumentError, match=r"one element.*shape \[2, 2\]"):
        t.item()
    with pytest.raises(ArgumentError, match="ambiguous"):
        bool(t)
    with pytest.raises(DTypeError, match="integer"):
        [0, 1][oar.to_tensor(1.0)]


def test_len_and_iteration():
    t = oar.to_tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], stop_gradient=False)
    assert len(t) == 3
    rows = list(t)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    (rows[0] + rows[2] * 2.0).sum().backward()  # rows keep the gradient path
    assert t.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]
    with pytest.raises(TypeError, match="0-d"):
        len(oar.to_tensor(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(oar.to_tensor(1.0)).__next__()


# -- numpy(): a copy, as Paddle; copy=False and np.asarray a read-only view --------------------------
def test_writing_into_numpy_cannot_change_a_value_backward_saved():
    # issue #24: numpy() was a writable alias of the buffer, so this gave x.grad == [20, 20, 20]
    a = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    b = (a * a).sum()
    values = a.numpy()
    values[...] = 10.0
    b.backward()
    assert a.grad.tolist() == [2.0, 4.0, 6.0] and a.tolist() == [1.0, 2.0, 3.0]
    assert a.inplace_version == 0


def test_numpy_is_a_fresh_writable_copy():
    t = oar.to_tensor([1.0, 2.0])
    a = t.numpy()
    assert a.flags.writeable and not np.shares_memory(a, t.numpy(copy=False))
    a[0] = 10.0
    assert t.tolist() == [1.0, 2.0] and t.numpy() is not t.numpy()


def test_numpy_copy_false_is_a_read_only_view_that_follows_the_tensor():
    t = oar.to_tensor([1.0, 2.0])
    view = t.numpy(copy=False)
    assert not view.flags.writeable and np.shares_memory(view, t.numpy(copy=False))
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 10.0
    t.add_(oar.to_tensor([1.0, 1.0]))  # an in-place op writes the buffer: the view sees it
    assert view.tolist() == [2.0, 3.0] and t.tolist() == [2.0, 3.0]


def test_array_protocol_follows_numpys_copy_semantics():
    t = oar.to_tensor([1.0, 2.0])
    view = np.asarray(t)  # copy=None: no copy, so a read-only view
    assert not view.flags.writeable and np.shares_memory(view, t.numpy(copy=False))
    with pytest.raises(ValueError, match="read-only"):
        view += 1.0
    assert not np.asarray(t, copy=False).flags.writeable
    copied = np.array(t)  # copy=True: a writable copy
    assert copied.flags.writeable and not np.shares_memory(copied, view)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64 and np.asarray(t, dtype=np.float64).flags.writeable
    with pytest.raises(ValueError, match="copy"):
        np.asarray(t, dtype=np.float64, copy=False)  # numpy's contract: copy=False never copies
    summed = np.add(t, 1.0)  # numpy functions see the values through __array__, as with Paddle
    assert type(summed) is np.ndarray and summed.tolist() == [2.0, 3.0]
    assert t.tolist() == [1.0, 2.0]


def test_hashing_is_by_identity():
    a, b = oar.to_tensor([1.0]), oar.to_tensor([1.0])
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"
    assert len({a, b, a}) == 2
    assert hash(a) == hash(a) and hash(a) != hash(b)


# -- copies -------------------------------------------------------------------------------------
def test_clone_copies_and_keeps_the_gradient_path():
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    y = x.clone()
    assert not np.shares_memory(y.numpy(copy=False), x.numpy(copy=False)) and y.tolist() == [1.0, 2.0]
    assert not y.stop_gradient and not y.is_leaf
    (y * 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    c = oar.to_tensor([1, 2]).clone()
    assert c.dtype == oar.int64 and c.stop_gradient
    assert oar.clone(x).tolist() == [1.0, 2.0]


def test_assign_into_an_output_tensor():
    out = oar.zeros([3, 3])
    result = oar.assign(np.array([[1, 1], [3, 4], [1, 3]], np.int64), out)
    assert result is out
    assert out.dtype == oar.int64 and out.tolist() == [[1, 1], [3, 4], [1, 3]]  # as Paddle's example
    with pytest.raises(ArgumentError, match="output must be a Tensor"):
        oar.assign([1.0], output=np.zeros(1))


def test_deepcopy_copies_a_leaf():
    p = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    p.persistable = True
    p.name = "w"
    (p * 2.0).sum().backward()
    q = copy.deepcopy(p)
    assert q is not p and q.tolist() == p.tolist()
    assert not np.shares_memory(q.numpy(copy=False), p.numpy(copy=False))
    assert q.stop_gradient is False and q.persistable is True and q.name == "w_deepcopy"
    assert q.grad.tolist() == [2.0, 2.0] and not np.shares_memory(q.grad.numpy(copy=False), p.grad.numpy(copy=False))
    nested = copy.deepcopy({"a": p, "b": [p]})
    assert nested["a"] is nested["b"][0]  # the memo keeps shared references shared


def test_deepcopy_of_a_non_leaf_is_an_error():
    y = oar.to_tensor([1.0], stop_gradient=False) * 2.0
    with pytest.raises(GradientError, match=r"leaf.*'multiply'.*detach"):
        copy.deepcopy(y)


# -- printing -----------------------------------------------------------------------------------
def test_repr_follows_paddle():
    t = oar.to_tensor([[0.1, 0.2], [0.3, 0.4]], stop_gradient=False)
    assert repr(t) == (
        "Tensor(shape=[2, 2], dtype=float32, place=Place(cpu), stop_gradient=False,\n"
        "       [[0.10000000, 0.20000000],\n"
        "        [0.30000001, 0.40000001]])"
    )
    assert repr(oar.to_tensor(1)) == "Tensor(shape=[], dtype=int64, place=Place(cpu), stop_gradient=True,\n       1)"
    assert str(oar.to_tensor([1.0, -0.5])) == (
        "Tensor(shape=[2], dtype=float32, place=Place(cpu), stop_gradient=True,\n"
        "       [ 1.        , -0.50000000])"
    )
    assert repr(oar.to_tensor([True, False])).endswith("[True , False])")


def test_repr_summarises_large_tensors():
    text = repr(oar.to_tensor(np.arange(2000.0).reshape(40, 50)))
    lines = text.splitlines()
    assert lines[1] == "       [[0.   , 1.   , 2.   , ..., 47.  , 48.  , 49.  ],"
    assert lines[4] == "        ...,"
    assert len(lines) == 8


def test_set_printoptions():
    try:
        oar.set_printoptions(precision=2)
        assert repr(oar.to_tensor([0.125, 1.0])).endswith("[0.12, 1.  ])")
        oar.set_printoptions(sci_mode=True)
        assert "1.25e-01" in repr(oar.to_tensor([0.125]))
    finally:
        oar.set_printoptions(precision=8, sci_mode=False)
    with pytest.raises(ArgumentError, match="precision must be int"):
        oar.set_printoptions(precision="2")


# -- devices ------------------------------------------------------------------------------------
@pytest.mark.skipif("gpu" in oar.plugins.registries().backends,
                    reason="checks what a user without the oar-triton plugin is told")
def test_gpu_without_the_plugin_says_what_to_install():
    with pytest.raises(DeviceError, match=r"oar-triton.*pip install oar-triton"):
        oar.set_device("gpu")
    assert oar.get_device() == "cpu"
    with pytest.raises(DeviceError, match="oar-triton"):
        oar.to_tensor([1.0], place="gpu:0")
    with pytest.raises(DeviceError, match="oar-triton"):
        oar.to_tensor([1.0], place=oar.CUDAPlace(0))
    assert oar.set_device("cpu") == "cpu"


# -- set_value (Paddle's Tensor.set_value) ---------------------------------------------------------
def test_set_value_copies_in_place_and_bumps_the_version():
    w = oar.to_tensor(np.zeros([2, 2], np.float32))
    buffer = w.numpy(copy=False)
    w.set_value(np.arange(4, dtype=np.float32).reshape(2, 2))
    assert np.shares_memory(w.numpy(copy=False), buffer) and w.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert w.inplace_version == 1
    w.set_value(oar.ones([2, 2], dtype="float32"))
    assert w.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_set_value_checks_shape_dtype_and_type():
    from oar.errors import ShapeError

    w = oar.zeros([2, 3], dtype="float32")
    with pytest.raises(ShapeError, match=r"set_value: the value has shape \[3, 2\] but the tensor has shape \[2, 3\]"):
        w.set_value(np.zeros([3, 2], np.float32))
    with pytest.raises(DTypeError, match="set_value: the value has dtype float64 but the tensor is float32"):
        w.set_value(np.zeros([2, 3]))
    with pytest.raises(ArgumentError, match="expected a numpy array or a Tensor, got list"):
        w.set_value([[0.0] * 3] * 2)
    assert w.inplace_version == 0  # a refused value changes nothing


def test_set_value_after_forward_makes_backward_raise():
    w = oar.to_tensor(np.ones([2]), stop_gradient=False)
    x = oar.to_tensor(np.ones([2]), stop_gradient=False)
    y = (w * x).sum()
    w.set_value(np.zeros([2]))
    with pytest.raises(GradientError, match="modified in place"):
        y.backward()


# -- the cpu backend's memory policy ---------------------------------------------------------------
def test_keep_freed_memory_respects_the_users_malloc_settings_and_opt_out():
    from oar._engine.memory import keep_freed_memory

    assert keep_freed_memory({"OAR_KEEP_FREED_MEMORY": "0"}) is False
    assert keep_freed_memory({"MALLOC_TRIM_THRESHOLD_": "0"}) is False
    assert keep_freed_memory({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}) is False
    assert keep_freed_memory({}) in (True, False)  # True on glibc; elsewhere a no-op


def test_from_numpy_shares_memory_both_ways():
    array = np.arange(6, dtype=np.float32)
    t = oar.from_numpy(array)
    assert t.dtype == oar.float32 and t.shape == [6] and t.stop_gradient
    array[0] = 10.0
    assert t.tolist()[0] == 10.0  # the array's writes are the tensor's
    t.add_(oar.ones([6]))
    assert array.tolist() == [11.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # and the tensor's in-place writes the array's
    part = array[2:5]  # a view of another array's memory
    view = oar.from_numpy(part)
    view.set_value(np.zeros(3, np.float32))
    assert array.tolist() == [11.0, 2.0, 0.0, 0.0, 0.0, 6.0]


def test_from_numpy_refuses_what_is_not_an_array_of_a_known_dtype():
    with pytest.raises(ValueError, match="expected a numpy.ndarray, got list"):
        oar.from_numpy([1.0, 2.0])
    with pytest.raises(TypeError, match="dtype uint16"):
        oar.from_numpy(np.zeros(2, np.uint16))
