"""numpy arrays cross without copies where the layout allows: checked by pointer identity on an
Identity model (the reference target returns its input's memory), and copies otherwise."""

import gc

import numpy as np
import pytest

import tessel
from conftest import identity_model


@pytest.fixture(scope="module")
def identity():
    return tessel.compile(identity_model(), target="ref")


def test_contiguous_input_is_not_copied(identity):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = identity.run(None, {"x": x})
    assert y.ctypes.data == x.ctypes.data
    np.testing.assert_array_equal(y, x)


def test_output_keeps_the_memory_alive(identity):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    address = x.ctypes.data
    y = identity(x)
    del x
    gc.collect()
    # The output's base holds the tensor, which holds the input array.
    assert y.ctypes.data == address
    np.testing.assert_array_equal(y, np.arange(6, dtype=np.float32).reshape(2, 3))


def test_non_contiguous_input_is_copied(identity):
    x = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]
    assert not x.flags.c_contiguous
    y = identity(x)
    assert y.ctypes.data != x.ctypes.data
    np.testing.assert_array_equal(y, x)


def test_other_dtype_is_converted(identity):
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    y = identity(x)
    assert y.dtype == np.float32
    assert y.ctypes.data != x.ctypes.data
    np.testing.assert_array_equal(y, x)


def test_fortran_order_input_is_copied(identity):
    x = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = identity(x)
    assert y.ctypes.data != x.ctypes.data
    assert y.flags.c_contiguous
    np.testing.assert_array_equal(y, x)


def test_outputs_view_tessel_memory(small_cnn_cpu, small_cnn_input):
    y = small_cnn_cpu(small_cnn_input)
    # No copy into a numpy-owned buffer: the array is a view whose base owns the tensor.
    assert not y.flags.owndata
    assert y.base is not None


def test_outputs_of_successive_runs_are_distinct(small_cnn_cpu, small_cnn_input):
    first = small_cnn_cpu(small_cnn_input)
    kept = first.copy()
    small_cnn_cpu(np.zeros_like(small_cnn_input))
    # A later run must not write into an output already handed out.
    np.testing.assert_array_equal(first, kept)
