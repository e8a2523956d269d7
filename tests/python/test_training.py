"""Training through popc.poptorch against PyTorch's own training of the
same module (the cpu backend, popc's reference): losses, trained weights
read back through the module, the loss rule, lazy weight sync and its
log, copyWeightsToDevice / loadStateDict, and inference models made from
a trained model."""
import copy
import ctypes
import unittest

import torch

import popc.poptorch as poptorch
from popc import _lib
from common import cpu_options, main, Classifier


class WithBatchNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        # no bias before BatchNorm: its gradient is 0 up to rounding,
        # which Adam would amplify
        self.fc1 = torch.nn.Linear(6, 8, bias=False)
        self.bn = torch.nn.BatchNorm1d(8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x, target):
        out = self.fc2(torch.relu(self.bn(self.fc1(x))))
        return torch.nn.functional.log_softmax(out, 1), \
            torch.nn.functional.cross_entropy(out, target)


def data(steps, batch, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(steps, batch, 6, generator=g),
            torch.randint(0, 3, (steps, batch), generator=g))


def torch_losses(model, optimizer, xs, ys):
    out = []
    for x, y in zip(xs, ys):
        optimizer.zero_grad()
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        out.append(float(loss))
    return out


def popc_weight(executor, name):
    t = ctypes.c_void_p()
    _lib.check(_lib.core.popc_model_get_weight(
        executor._popc.handle, name.encode(), ctypes.byref(t)))
    return torch.from_numpy(_lib.from_popc(t.value, owned=False).copy())


class LogLines:
    """popc's log lines, through popc_log_set_callback."""

    def __enter__(self):
        self.lines = []
        fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p,
                              ctypes.c_void_p)
        self._fn = fn(lambda level, msg, user: self.lines.append(
            msg.decode()))
        _lib.core.popc_log_set_callback.argtypes = [fn, ctypes.c_void_p]
        _lib.core.popc_log_set_callback(self._fn, None)
        self._level = _lib.core.popc_log_level()
        _lib.core.popc_log_set_level(_lib.LOG_INFO)
        return self

    def count(self, text):
        return sum(text in line for line in self.lines)

    def __exit__(self, *exc):
        _lib.core.popc_log_set_level(self._level)
        _lib.core.popc_log_set_callback(
            ctypes.cast(None, type(self._fn)), None)


class Training(unittest.TestCase):
    def compare(self, make_model, make_optimizer, steps=10, batch=8):
        torch.manual_seed(0)
        model = make_model()
        reference = copy.deepcopy(model)
        xs, ys = data(steps, batch)
        expected = torch_losses(reference, make_optimizer(reference), xs, ys)
        pm = poptorch.trainingModel(model, options=cpu_options(),
                                    optimizer=make_optimizer(model))
        got = [float(pm(x, y)[1]) for x, y in zip(xs, ys)]
        worst = max(abs(a - b) for a, b in zip(got, expected))
        print("largest loss difference over %d steps: %.3g" % (steps, worst))
        self.assertLessEqual(worst, 1e-5)
        # trained values through the module equal popc's and PyTorch's
        for name, value in model.state_dict().items():
            if name.endswith("num_batches_tracked"):
                continue
            self.assertTrue(torch.equal(value, popc_weight(pm, name)), name)
            diff = (value - reference.state_dict()[name]).abs().max()
            self.assertLessEqual(float(diff), 1e-5, name)
        return pm, model

    def test_sgd_momentum_losses_match_pytorch(self):
        self.compare(Classifier, lambda m: torch.optim.SGD(
            m.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3))

    def test_adam_with_batchnorm_losses_match_pytorch(self):
        self.compare(WithBatchNorm,
                     lambda m: torch.optim.Adam(m.parameters(), lr=0.01))

    def test_mse_and_l1_losses(self):
        class Regression(torch.nn.Module):
            def __init__(self, loss):
                super().__init__()
                self.fc = torch.nn.Linear(6, 3)
                self.loss = loss

            def forward(self, x, target):
                out = self.fc(x)
                return out, self.loss(
                    out, torch.nn.functional.one_hot(target, 3).float())

        for loss in (torch.nn.MSELoss(), torch.nn.L1Loss(reduction="sum")):
            with self.subTest(loss=type(loss).__name__):
                self.compare(lambda: Regression(loss), lambda m:
                             torch.optim.SGD(m.parameters(), lr=0.01),
                             steps=5)

    def test_identity_loss_reductions(self):
        for reduction in ("sum", "mean", "none"):
            with self.subTest(reduction=reduction):
                torch.manual_seed(0)
                model = torch.nn.Linear(6, 3)
                reference = copy.deepcopy(model)
                xs, _ = data(4, 8)

                class Wrapped(torch.nn.Module):
                    def __init__(self, inner):
                        super().__init__()
                        self.inner = inner

                    def forward(self, x):
                        y = self.inner(x)
                        return poptorch.identity_loss(y * y, reduction)

                pm = poptorch.trainingModel(
                    Wrapped(model), options=cpu_options(),
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.01))
                opt = torch.optim.SGD(reference.parameters(), lr=0.01)
                for x in xs:
                    got = pm(x)
                    opt.zero_grad()
                    y = reference(x)
                    loss = {"sum": (y * y).sum(), "mean": (y * y).mean(),
                            "none": y * y}[reduction]
                    # 'none' seeds every element's gradient with 1
                    (loss.sum() if reduction == "none" else loss).backward()
                    opt.step()
                    self.assertEqual(tuple(got.shape), tuple(loss.shape))
                    self.assertLessEqual(float((got - loss).abs().max()),
                                         1e-5)

    def test_model_without_loss_is_refused(self):
        pm = poptorch.trainingModel(torch.nn.Linear(6, 3),
                                    options=cpu_options())
        with self.assertRaises(poptorch.Error) as cm:
            pm(torch.randn(4, 6))
        self.assertIn("Couldn't find a loss in graph!", str(cm.exception))

    def test_weights_sync_lazily_and_the_log_says_so(self):
        model = Classifier()
        pm = poptorch.trainingModel(model, options=cpu_options())
        x, y = data(1, 8)
        with LogLines() as log:
            pm(x[0], y[0])
            pm(x[0], y[0])
            self.assertEqual(log.count("copyWeightsToHost"), 0,
                             "runs alone copy nothing to the host")
            first = model.model.fc1.weight.clone()
            self.assertEqual(log.count("copyWeightsToHost"), 1)
            model.model.fc2.bias.sum()
            model.state_dict()
            list(model.parameters())
            self.assertEqual(log.count("copyWeightsToHost"), 1,
                             "one copy serves every read until the next run")
            pm(x[0], y[0])
            second = model.state_dict()["model.fc1.weight"]
            self.assertEqual(log.count("copyWeightsToHost"), 2)
        self.assertFalse(torch.equal(first, second), "training moved fc1")
        self.assertFalse(pm.copyWeightsToHostIfNeeded())

    def test_copy_weights_to_device_and_load_state_dict(self):
        torch.manual_seed(0)
        model = Classifier()
        start = copy.deepcopy(model.state_dict())
        reference = copy.deepcopy(model)
        pm = poptorch.trainingModel(model, options=cpu_options(),
                                    optimizer=torch.optim.SGD(
                                        model.parameters(), lr=0.1))
        xs, ys = data(3, 8)
        for x, y in zip(xs, ys):
            pm(x, y)
        # back to the starting weights: the next loss is PyTorch's first
        pm.loadStateDict(start)
        _, loss = pm(xs[0], ys[0])
        _, expected = reference(xs[0], ys[0])
        self.assertLessEqual(abs(float(loss) - float(expected)), 1e-6)
        # weights written into the module reach the device on request
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
        pm.copyWeightsToDevice()
        _, loss = pm(xs[1], ys[1])
        self.assertAlmostEqual(float(loss), float(torch.log(
            torch.tensor(3.0))), places=6)

    def test_inference_model_sees_trained_weights(self):
        torch.manual_seed(0)
        model = Classifier()
        pm = poptorch.trainingModel(model, options=cpu_options(),
                                    optimizer=torch.optim.SGD(
                                        model.parameters(), lr=0.1))
        xs, ys = data(6, 8)
        for i in range(3):
            pm(xs[i], ys[i])
        inference = poptorch.inferenceModel(model, options=cpu_options())
        out, _ = inference(xs[5], ys[5])
        with torch.no_grad():
            expected, _ = model(xs[5], ys[5])
        self.assertLessEqual(float((out - expected).abs().max()), 1e-6)
        # more training: the inference model follows (shared weights)
        for i in range(3, 5):
            pm(xs[i], ys[i])
        out2, _ = inference(xs[5], ys[5])
        with torch.no_grad():
            expected2, _ = model(xs[5], ys[5])
        self.assertFalse(torch.equal(out, out2))
        self.assertLessEqual(float((out2 - expected2).abs().max()), 1e-6)

    def test_inference_compiled_first_follows_training(self):
        torch.manual_seed(0)
        model = Classifier()
        xs, ys = data(3, 8)
        inference = poptorch.inferenceModel(model, options=cpu_options())
        before, _ = inference(xs[2], ys[2])
        pm = poptorch.trainingModel(model, options=cpu_options(),
                                    optimizer=torch.optim.SGD(
                                        model.parameters(), lr=0.1))
        pm(xs[0], ys[0])
        pm(xs[1], ys[1])
        after, _ = inference(xs[2], ys[2])
        with torch.no_grad():
            expected, _ = model(xs[2], ys[2])
        self.assertFalse(torch.equal(before, after))
        self.assertLessEqual(float((after - expected).abs().max()), 1e-6)

    def test_frozen_parameters_keep_their_values(self):
        for make in (lambda m: torch.optim.SGD(m.parameters(), lr=0.1,
                                               momentum=0.9,
                                               weight_decay=0.01),
                     lambda m: torch.optim.AdamW(m.parameters(), lr=0.01)):
            torch.manual_seed(0)
            model = Classifier()
            for p in model.model.fc1.parameters():
                p.requires_grad_(False)
            reference = copy.deepcopy(model)
            xs, ys = data(5, 8)
            expected = torch_losses(reference, make(reference), xs, ys)
            frozen = model.model.fc1.weight.detach().clone()
            pm = poptorch.trainingModel(model, options=cpu_options(),
                                        optimizer=make(model))
            got = [float(pm(x, y)[1]) for x, y in zip(xs, ys)]
            self.assertLessEqual(max(abs(a - b) for a, b in
                                     zip(got, expected)), 1e-5)
            self.assertTrue(torch.equal(model.model.fc1.weight, frozen))
            diff = (model.model.fc2.weight -
                    reference.model.fc2.weight).abs().max()
            self.assertLessEqual(float(diff), 1e-5, "fc2 trains as torch's")
        model = Classifier()
        model.model.fc1.weight.requires_grad_(False)
        with self.assertRaises(ValueError) as cm:
            poptorch.trainingModel(model, options=cpu_options(),
                                   optimizer=poptorch.optim.SGD(
                                       model.parameters(), lr=0.1,
                                       max_grad_norm=1.0))
        self.assertIn("max_grad_norm", str(cm.exception))

if __name__ == "__main__":
    main()
