"""The installed popc package (run by tests/test_oot_plugins.sh on the
staged install): it comes from the staged pythondir, names the final
libdir, and runs a module as PyTorch does."""
import os

import torch

import popc
import popc._paths
import popc.poptorch as poptorch

package_dir = os.environ["POPC_PACKAGE_DIR"]
assert popc.__file__.startswith(package_dir), popc.__file__
assert popc._paths.LIBDIR == os.environ["POPC_FINAL_LIBDIR"], \
    (popc._paths.LIBDIR, os.environ["POPC_FINAL_LIBDIR"])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
x = torch.randn(5, 4)
opts = poptorch.Options()
opts.backend("cpu")
out = poptorch.inferenceModel(model, options=opts)(x)
with torch.no_grad():
    diff = float((out - model(x)).abs().max())
assert diff <= 1e-6, diff
print("ok: the installed package from %s runs a model (difference %.2g)" %
      (package_dir, diff))
