"""Optimizers: torch.optim's and poptorch.optim's on popc's optimizer
plugins, against PyTorch's training (cpu backend): every type, parameter
groups, loss scaling, max_grad_norm, setOptimizer without a recompile,
and the refusals."""
import copy
import unittest

import torch

import popc.poptorch as poptorch
from popc import _lib
from common import cpu_options, main, Classifier


def batches(steps=5, batch=8):
    g = torch.Generator().manual_seed(3)
    return (torch.randn(steps, batch, 6, generator=g),
            torch.randint(0, 3, (steps, batch), generator=g))


class Optim(unittest.TestCase):
    def run_both(self, make_popc_opt, make_ref_opt, clip=None, steps=5,
                 tol=1e-5):
        torch.manual_seed(0)
        model = Classifier()
        reference = copy.deepcopy(model)
        pm = poptorch.trainingModel(model, options=cpu_options(),
                                    optimizer=make_popc_opt(model))
        ref_opt = make_ref_opt(reference)
        xs, ys = batches(steps)
        for x, y in zip(xs, ys):
            _, loss = pm(x, y)
            ref_opt.zero_grad()
            _, ref_loss = reference(x, y)
            ref_loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(reference.parameters(), clip)
            ref_opt.step()
            self.assertLessEqual(abs(float(loss) - float(ref_loss)), tol)
        for name, value in model.state_dict().items():
            diff = (value - reference.state_dict()[name]).abs().max()
            self.assertLessEqual(float(diff), tol, name)
        return pm, model

    def test_torch_optimizers(self):
        cases = {
            "SGD": lambda m: torch.optim.SGD(m.parameters(), lr=0.05,
                                             momentum=0.8, nesterov=True),
            "Adam": lambda m: torch.optim.Adam(m.parameters(), lr=0.01,
                                               weight_decay=1e-3),
            "AdamW": lambda m: torch.optim.AdamW(m.parameters(), lr=0.01),
            "RMSprop": lambda m: torch.optim.RMSprop(
                m.parameters(), lr=0.01, momentum=0.5, centered=True),
        }
        for name, make in cases.items():
            with self.subTest(optimizer=name):
                self.run_both(make, make)

    def test_poptorch_optimizers(self):
        cases = {
            "SGD": (lambda m: poptorch.optim.SGD(m.parameters(), lr=0.05,
                                                 momentum=0.8,
                                                 loss_scaling=64.0),
                    lambda m: torch.optim.SGD(m.parameters(), lr=0.05,
                                              momentum=0.8)),
            "Adam": (lambda m: poptorch.optim.Adam(m.parameters(), lr=0.01,
                                                   loss_scaling=8.0),
                     lambda m: torch.optim.Adam(m.parameters(), lr=0.01)),
            "AdamW": (lambda m: poptorch.optim.AdamW(m.parameters(),
                                                     lr=0.01),
                      lambda m: torch.optim.AdamW(m.parameters(), lr=0.01)),
            "RMSprop": (lambda m: poptorch.optim.RMSprop(m.parameters(),
                                                         lr=0.01),
                        lambda m: torch.optim.RMSprop(m.parameters(),
                                                      lr=0.01)),
            "LAMB": (lambda m: poptorch.optim.LAMB(m.parameters(), lr=0.01),
                     lambda m: poptorch.optim.LAMB(m.parameters(), lr=0.01)),
        }
        for name, (make, ref) in cases.items():
            with self.subTest(optimizer=name):
                self.run_both(make, ref)

    def test_max_grad_norm_clips_like_torch(self):
        self.run_both(
            lambda m: poptorch.optim.SGD(m.parameters(), lr=0.1,
                                         max_grad_norm=0.05),
            lambda m: torch.optim.SGD(m.parameters(), lr=0.1), clip=0.05)

    def test_parameter_groups(self):
        def groups(m, cls):
            return cls([{"params": m.model.fc1.parameters(), "lr": 0.2},
                        {"params": m.model.fc2.parameters()}],
                       lr=0.01, momentum=0.5)
        self.run_both(lambda m: groups(m, torch.optim.SGD),
                      lambda m: groups(m, torch.optim.SGD))

    def test_set_optimizer_without_recompile(self):
        torch.manual_seed(0)
        model = Classifier()
        reference = copy.deepcopy(model)
        pm = poptorch.trainingModel(model, options=cpu_options(),
                                    optimizer=torch.optim.SGD(
                                        model.parameters(), lr=0.1))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
        xs, ys = batches(4)
        compile_time = None
        for i, (x, y) in enumerate(zip(xs, ys)):
            if i == 2:
                pm.setOptimizer(torch.optim.SGD(model.parameters(),
                                                lr=0.01))
                for g in ref_opt.param_groups:
                    g["lr"] = 0.01
            _, loss = pm(x, y)
            t = _lib.core.popc_model_compilation_time(pm._popc.handle)
            compile_time = t if compile_time is None else compile_time
            self.assertEqual(t, compile_time, "no recompile")
            ref_opt.zero_grad()
            _, ref_loss = reference(x, y)
            ref_loss.backward()
            ref_opt.step()
            self.assertLessEqual(abs(float(loss) - float(ref_loss)), 1e-6)
        self.assertTrue(pm.isCompiled())
        # a constant (momentum 0 is constant for torch.optim) cannot change
        with self.assertRaises(ValueError) as cm:
            pm.setOptimizer(torch.optim.SGD(model.parameters(), lr=0.01,
                                            momentum=0.9))
        self.assertIn("constant", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            pm.setOptimizer(torch.optim.Adam(model.parameters()))
        self.assertIn("Can not replace optimizer", str(cm.exception))

    def test_refusals(self):
        model = Classifier()
        with self.assertRaises(ValueError) as cm:
            poptorch.optim.Adam(model.parameters(), amsgrad=True)
        self.assertIn("Only non-amsgrad", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            poptorch.trainingModel(model, options=cpu_options(),
                                   optimizer=torch.optim.Adagrad(
                                       model.parameters()))
        self.assertIn("Unsupported optimizer type Adagrad", str(cm.exception))
        with self.assertRaises(AssertionError) as cm:
            poptorch.optim.SGD(model.parameters(), lr=0.1,
                               accum_type=torch.int32)
        self.assertIn("Accumulation types must be either", str(cm.exception))
        opt = poptorch.optim.SGD(model.parameters(), lr=0.1)
        with self.assertRaises(AssertionError):
            opt.variable_attrs.markAsVariable("nonsense")

    def test_float16_accumulators_reach_popc(self):
        model = Classifier()
        opt = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                                 velocity_accum_type=torch.float16)
        converted = poptorch.optim.convert(opt, {})
        self.assertEqual(_lib.core.popc_optimizer_get(
            converted.handle, 0, b"velocity_accum_type"), 1.0)
        pm, _ = self.run_both(
            lambda m: poptorch.optim.SGD(m.parameters(), lr=0.1,
                                         momentum=0.9,
                                         velocity_accum_type=torch.float16),
            lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
            tol=1e-2)


if __name__ == "__main__":
    main()
