"""A model's lifecycle through popc.poptorch: compile, isCompiled,
destroy, detachFromDevice / attachToDevice / isAttachedToDevice,
compileAndExport and poptorch.load, save, getTensorNames, latencies."""
import os
import tempfile
import unittest

import torch

import popc.poptorch as poptorch
from common import cpu_options, main, Classifier, MLP


class Lifecycle(unittest.TestCase):
    def test_compile_destroy_detach_attach(self):
        torch.manual_seed(0)
        model = Classifier()
        pm = poptorch.trainingModel(model, options=cpu_options())
        x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
        self.assertFalse(pm.isCompiled())
        pm.compile(x, y)
        self.assertTrue(pm.isCompiled())
        self.assertTrue(pm.isAttachedToDevice())
        _, loss1 = pm(x, y)
        pm.detachFromDevice()
        self.assertFalse(pm.isAttachedToDevice())
        with self.assertRaises(poptorch.Error) as cm:
            pm.detachFromDevice()
        self.assertIn("Device is not attached", str(cm.exception))
        pm.attachToDevice()
        self.assertTrue(pm.isAttachedToDevice())
        with self.assertRaises(poptorch.Error) as cm:
            pm.attachToDevice()
        self.assertIn("Device is already attached", str(cm.exception))
        _, loss2 = pm(x, y)
        self.assertLess(float(loss2), float(loss1), "training went on")
        trained = model.model.fc1.weight.clone()
        pm.destroy()
        self.assertFalse(pm.isCompiled())
        self.assertTrue(torch.equal(model.model.fc1.weight, trained),
                        "destroy kept the trained weights")
        _, loss3 = pm(x, y)     # compiles again, from the trained weights
        self.assertTrue(pm.isCompiled())
        self.assertLess(float(loss3), float(loss2))
        self.assertIn("model.fc1.weight", pm.getTensorNames())
        for latency in (pm.getLatency(), pm.getComputeLatency(),
                        pm.getHostIpuLatency(), pm.getIpuHostLatency()):
            low, high, mean = latency
            self.assertTrue(0.0 <= low <= mean <= high, latency)
        self.assertGreater(pm.getLatency()[0], 0.0)
        counters = pm.getPerfCounters()
        self.assertEqual(len(counters["input"]), 2, "one list per input")
        self.assertEqual(len(counters["output"]), 2, "one per output")
        self.assertLessEqual(counters["input"][0][0],
                             counters["output_complete"][0][0])

    def test_compile_and_export_then_load(self):
        torch.manual_seed(0)
        model = MLP()
        x = torch.randn(4, 6)
        with torch.no_grad():
            expected = model(x)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mlp.popc")
            pm = poptorch.inferenceModel(model, options=cpu_options())
            pm.compileAndExport(path, x)
            self.assertTrue(os.path.exists(path))
            loaded = poptorch.load(path, edit_opts_fn=lambda o:
                                   o.backend("cpu"))
            out = loaded(x)
            self.assertLessEqual(float((out - expected).abs().max()), 1e-6)
            with self.assertRaises(NotImplementedError):
                pm.compileAndExport(path, x, export_model=False)
            # a trained model saved and loaded keeps its trained weights
            cl = Classifier()
            tm = poptorch.trainingModel(cl, options=cpu_options())
            y = torch.randint(0, 3, (4,))
            tm(x, y)
            tm.save(os.path.join(d, "trained.popc"))
            again = poptorch.load(os.path.join(d, "trained.popc"),
                                  edit_opts_fn=lambda o: o.backend("cpu"))
            _, loss_loaded = again(x, y)
            _, loss_continued = tm(x, y)
            self.assertEqual(float(loss_loaded), float(loss_continued))
            with self.assertRaises(poptorch.Error) as cm:
                poptorch.load(os.path.join(d, "missing.popc"))
            self.assertIn("missing.popc", str(cm.exception))

    def test_load_executable(self):
        torch.manual_seed(0)
        model = Classifier()
        x, y = torch.randn(4, 6), torch.randint(0, 3, (4,))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trained.popc")
            tm = poptorch.trainingModel(model, options=cpu_options())
            tm(x, y)
            tm.save(path)
            saved = model.model.fc1.weight.detach().clone()
            _, expected = tm(x, y)
            other = poptorch.trainingModel(Classifier(),
                                           options=cpu_options())
            with self.assertRaises(poptorch.Error):
                other.loadExecutable(path)     # not traced yet
            other.compile(x, y)
            other.loadExecutable(path)
            _, loss = other(x, y)
            self.assertEqual(float(loss), float(expected))
            # the module reads the weights the file brought, trained once
            # more by that run
            self.assertTrue(torch.equal(other.model.model.fc1.weight,
                                        model.model.fc1.weight))
            self.assertFalse(torch.equal(other.model.model.fc1.weight,
                                         saved))

    def test_anchored_tensor(self):
        torch.manual_seed(0)
        model = MLP()
        opts = cpu_options()
        opts.anchorTensor("hidden", "/fc1/Gemm_output_0")
        pm = poptorch.inferenceModel(model, options=opts)
        x = torch.randn(4, 6)
        pm(x)
        with torch.no_grad():
            expected = model.fc1(x)
        got = pm.getAnchoredTensor("hidden")
        self.assertLessEqual(float((got - expected).abs().max()), 1e-6)

    def test_options_must_be_options(self):
        with self.assertRaises(TypeError) as cm:
            poptorch.inferenceModel(MLP(), options={"deviceIterations": 2})
        self.assertIn("Expected poptorch.Options", str(cm.exception))

    def test_cycle_count(self):
        x = torch.randn(4, 6)
        pm = poptorch.inferenceModel(MLP(), options=poptorch.Options())
        pm(x)
        with self.assertRaises(poptorch.Error) as cm:
            pm.cycleCount()
        self.assertIn("Cycle count logging is disabled", str(cm.exception))
        opts = poptorch.Options().logCycleCount(True)
        pm = poptorch.inferenceModel(MLP(), options=opts)
        pm(x)
        self.assertGreater(pm.cycleCount(), 0)

    def test_refused_apis_say_so(self):
        pm = poptorch.inferenceModel(MLP(), options=cpu_options())
        with self.assertRaises(NotImplementedError) as cm:
            pm.rng_state
        self.assertIn("not supported yet", str(cm.exception))


if __name__ == "__main__":
    main()
