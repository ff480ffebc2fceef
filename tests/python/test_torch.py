"""tessel.torch.compile: a torch.nn.Module exported, compiled and called with tensors."""

import numpy as np
import pytest

import tessel

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return torch.softmax(self.fc(y.flatten(1)), dim=1)


class TwoOutputs(torch.nn.Module):
    def forward(self, a, b):
        return a + b, torch.tanh(a * b)


class NotExportable(torch.nn.Module):
    def forward(self, x):
        return torch.fft.fft(x).real  # torch 1.13 exports no FFT.


@pytest.mark.parametrize("target", ["cpu", "ref"])
def test_compiled_module_matches_torch(target):
    torch.manual_seed(0)
    net = SmallNet().eval()
    x = torch.randn(2, 3, 8, 8)
    fast = tessel.torch.compile(net, (x,), target=target)
    y = fast(x)
    assert isinstance(y, torch.Tensor) and y.shape == (2, 10)
    with torch.no_grad():
        np.testing.assert_allclose(y.numpy(), net(x).numpy(), atol=1e-5)


def test_several_inputs_and_outputs():
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    fast = tessel.torch.compile(TwoOutputs(), (a, b))
    s, t = fast(a, b)
    np.testing.assert_allclose(s.numpy(), (a + b).numpy(), atol=1e-6)
    np.testing.assert_allclose(t.numpy(), torch.tanh(a * b).numpy(), atol=1e-5)
    with pytest.raises(tessel.InvalidArgumentError, match="TwoOutputs was compiled for 2 inputs; got 1"):
        fast(a)


class Same(torch.nn.Module):
    def forward(self, x):
        return x


def test_tensors_cross_without_copies():
    x = torch.randn(4, 5)
    fast = tessel.torch.compile(Same(), (x,), target="ref")
    y = fast(x)
    # Tensor -> numpy view -> borrowed feed -> the reference's Identity -> numpy view -> torch.from_numpy.
    assert y.data_ptr() == x.data_ptr()


def test_export_failure_names_the_module():
    with pytest.raises(tessel.ExportError, match="NotExportable"):
        tessel.torch.compile(NotExportable(), (torch.randn(8),))
