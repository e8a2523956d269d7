"""Shared pieces of the popc.poptorch tests: the cpu backend, small
models, and a check that counts."""
import unittest

import torch

import popc.poptorch as poptorch


def cpu_options():
    """Options on popc's reference backend (the oracle), quiet."""
    opts = poptorch.Options()
    opts.backend("cpu")
    opts.showCompilationProgressBar(False)
    return opts


class MLP(torch.nn.Module):
    def __init__(self, n_in=6, hidden=8, n_out=3):
        super().__init__()
        self.fc1 = torch.nn.Linear(n_in, hidden)
        self.fc2 = torch.nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Classifier(torch.nn.Module):
    """The tutorial's shape: returns (outputs, loss)."""

    def __init__(self, n_in=6, hidden=8, n_out=3):
        super().__init__()
        self.model = MLP(n_in, hidden, n_out)

    def forward(self, x, target):
        out = self.model(x)
        return out, torch.nn.functional.cross_entropy(out, target)


def main():
    unittest.main(verbosity=2)
