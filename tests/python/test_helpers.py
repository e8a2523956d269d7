"""PopTorch's op helpers through popc.poptorch, each exported as a popc op
or annotation and run by popc (cpu backend), against PyTorch."""
import ctypes
import os
import tempfile
import unittest

import torch

import popc.poptorch as poptorch
from popc import _lib
from popc.poptorch import _marks
from common import cpu_options, main
from test_training import LogLines


def graph_nodes(pm):
    g = _lib.core.popc_model_graph(pm._popc.handle)
    return [(_lib.core.popc_graph_node_name(g, n).decode(),
             _lib.core.popc_graph_node_op(g, n).decode(),
             _lib.core.popc_graph_node_annotations(g, n))
            for n in range(_lib.core.popc_graph_n_nodes(g))]


class _Attrs(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int),
                ("items", ctypes.POINTER(_marks._Attr))]


def node_attrs(pm, node):
    """{name: int, float or str value} of a node of the model's graph."""
    fn = _lib.core.popc_graph_node_attrs
    fn.restype = _Attrs
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int]
    a = fn(_lib.core.popc_model_graph(pm._popc.handle), node)
    out = {}
    for i in range(a.n):
        x = a.items[i]
        out[x.name.decode()] = {1: x.i, 2: x.f}.get(
            x.type, x.s.decode() if x.s else None)
    return out


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, *xs):
        return self.fn(self, *xs)


class Helpers(unittest.TestCase):
    def infer(self, fn, *xs):
        model = Fn(fn)
        pm = poptorch.inferenceModel(model, options=cpu_options())
        out = pm(*xs)
        with torch.no_grad():
            expected = model(*xs)
        return pm, out, expected

    def test_ipu_print_tensor_logs(self):
        x = torch.randn(2, 4)
        with LogLines() as log:
            pm, out, expected = self.infer(
                lambda m, x: poptorch.ipu_print_tensor(m.fc(x), "hidden") * 2,
                x)
        self.assertTrue(torch.allclose(out, expected, atol=1e-6))
        self.assertGreaterEqual(log.count("hidden"), 1, log.lines[-5:])
        self.assertIn("IpuPrintTensor", [op for _, op, _ in graph_nodes(pm)])

    def test_nop_and_checkpoint(self):
        x = torch.randn(2, 4)
        pm, out, expected = self.infer(
            lambda m, x: poptorch.recomputationCheckpoint(
                poptorch.nop(m.fc(x))) + 1, x)
        self.assertTrue(torch.allclose(out, expected, atol=1e-6))
        ops = [op for _, op, _ in graph_nodes(pm)]
        self.assertIn("Nop", ops)
        self.assertIn("RecomputationCheckpoint", ops)

    def test_set_available_memory_annotates_the_producer(self):
        x = torch.randn(2, 4)
        pm, out, expected = self.infer(
            lambda m, x: poptorch.set_available_memory(m.fc(x), 0.3), x)
        self.assertTrue(torch.allclose(out, expected, atol=1e-6))
        gemm = [a for name, op, a in graph_nodes(pm) if op == "Gemm"]
        self.assertEqual(len(gemm), 1)
        self.assertAlmostEqual(gemm[0].available_memory, 0.3)
        with self.assertRaises(ValueError):
            poptorch.set_available_memory(x, 1.5)

    def test_serialized_matmul(self):
        a, b = torch.randn(4, 6), torch.randn(6, 8)
        pm, out, expected = self.infer(
            lambda m, a, b: poptorch.serializedMatMul(
                a, b, poptorch.MatMulSerializationMode.OutputChannels, 4),
            a, b)
        self.assertTrue(torch.allclose(out, expected, atol=1e-5))
        # the product carries popc's serialization (exported as attributes)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            _lib.onnx.popc_onnx_export_model.argtypes = [ctypes.c_void_p,
                                                         ctypes.c_char_p]
            _lib.check(_lib.onnx.popc_onnx_export_model(pm._popc.handle,
                                                        path.encode()))
            with open(path, "rb") as f:
                exported = f.read()
        self.assertIn(b"serialization_mode", exported)
        self.assertIn(b"output_channels", exported)
        with self.assertRaises(poptorch.Error) as cm:
            self.infer(lambda m, a, b: poptorch.serializedMatMul(
                a, b, poptorch.MatMulSerializationMode.OutputChannels, 3),
                a, b)
        self.assertIn("factor", str(cm.exception))

    def test_dynamic_slice_with_run_time_start(self):
        x = torch.arange(24.0).reshape(6, 4)
        model = Fn(lambda m, x, s: poptorch.dynamic_slice(x, 0, s, 3, 1))
        pm = poptorch.inferenceModel(model, options=cpu_options())
        for start, rows in ((1, [1, 2, 3]), (4, [4, 5, 0]), (9, [0, 1, 2])):
            out = pm(x, torch.tensor([start], dtype=torch.int32))
            self.assertTrue(torch.equal(out, x[rows]), (start, out))

    def test_custom_op_from_a_plugin(self):
        plugins = os.path.join(os.environ["POPC_BUILDDIR"], "tests", "oot",
                               ".libs")
        if not os.path.exists(os.path.join(plugins, "cube.so")):
            self.fail("tests/oot/cube.la is not built (make check builds "
                      "it)")
        opts = cpu_options().pluginPath(plugins)

        def cube(m, x, bias):
            out = poptorch.custom_op([x, bias], "Cube", "com.acme", 1,
                                     example_outputs=[x, x])
            return out[0], out[1]

        x, bias = torch.randn(3, 4), torch.randn(4)
        pm = poptorch.inferenceModel(Fn(cube), options=opts)
        y, z = pm(x, bias)
        self.assertTrue(torch.allclose(z, x ** 3, atol=1e-5))
        self.assertTrue(torch.allclose(y, x ** 3 + bias, atol=1e-5))

    def test_name_scope(self):
        def fn(m, x):
            with poptorch.NameScope("head"):
                return m.fc(x)
        pm, _, _ = self.infer(fn, torch.randn(2, 4))
        self.assertTrue(any(n.startswith("/head/") for n, _, _ in
                            graph_nodes(pm)))

    def test_is_running_on_ipu_while_traced(self):
        x = torch.randn(2, 4)
        pm, out, expected = self.infer(
            lambda m, x: x * (2 if poptorch.isRunningOnIpu() else 3), x)
        self.assertTrue(torch.equal(out, x * 2))
        self.assertTrue(torch.equal(expected, x * 3))

    def test_ctc_beam_search_decoder(self):
        # one sample whose best path is plain: 1, blank, 2, 2 -> [1, 2]
        p = torch.full((4, 1, 3), 0.05)
        for t, c in enumerate([1, 0, 2, 2]):
            p[t, 0, c] = 0.9
        log_probs = torch.log(p / p.sum(2, keepdim=True))

        def decode(m, probs, lengths):
            return tuple(poptorch.ctc_beam_search_decoder(
                probs, lengths, beam_width=5, top_paths=2))

        pm = poptorch.inferenceModel(Fn(decode), options=cpu_options())
        probs, lengths, paths = pm(log_probs, torch.tensor([4]))
        self.assertEqual(tuple(paths.shape), (1, 2, 4))
        self.assertEqual(int(lengths[0, 0]), 2)
        self.assertEqual(paths[0, 0, :2].tolist(), [1, 2])
        self.assertGreater(float(probs[0, 0]), float(probs[0, 1]))
        with self.assertRaises(NotImplementedError):
            poptorch.ctc_beam_search_decoder(log_probs, torch.tensor([4]))

    def test_overlapped_host_io(self):
        def fn(m, x):
            x = poptorch.set_overlap_for_input(
                x, poptorch.OverlapMode.OverlapAccumulationLoop)
            return poptorch.set_overlap_for_output(
                m.fc(x), poptorch.OverlapMode.OverlapDeviceIterationLoop)

        torch.manual_seed(0)
        model = Fn(fn)
        x = torch.randn(8, 4)
        with torch.no_grad():
            expected = model(x)
        opts = poptorch.Options().deviceIterations(2)
        opts.setExecutionStrategy(poptorch.ShardedExecution())
        opts.TensorLocations.numIOTiles(32)
        opts.outputMode(poptorch.OutputMode.All)
        pm = poptorch.inferenceModel(model, options=opts)
        out = pm(x)
        self.assertLessEqual(float((out - expected).abs().max()), 1e-6)
        marks = sorted(op for _, op, a in graph_nodes(pm))
        self.assertGreaterEqual(marks.count("Identity"), 2)
        # PopTorch's conditions: not pipelined
        pm = poptorch.inferenceModel(Fn(fn), options=poptorch.Options())
        with self.assertRaises(poptorch.Error) as cm:
            pm(x)
        self.assertIn("overlap", str(cm.exception).lower())

    def test_multi_conv(self):
        class Two(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Conv2d(2, 4, 3)
                self.b = torch.nn.Conv2d(2, 4, 3)

            def forward(self, x, u):
                with poptorch.MultiConv().availableMemoryProportions(
                        [0.2, 0.4]).perConvReservedTiles(20):
                    y = self.a(x)
                    v = self.b(u)
                return y + v

        torch.manual_seed(0)
        model = Two()
        x, u = torch.randn(2, 2, 6, 6), torch.randn(2, 2, 6, 6)
        with torch.no_grad():
            expected = model(x, u)
        pm = poptorch.inferenceModel(model, options=poptorch.Options())
        out = pm(x, u)
        self.assertLessEqual(float((out - expected).abs().max()), 1e-5)
        convs = [a for _, op, a in graph_nodes(pm) if op == "Conv"]
        self.assertEqual(sorted(round(a.available_memory, 3)
                                for a in convs), [0.2, 0.4])
        attrs = [node_attrs(pm, n) for n, (_, op, _) in
                 enumerate(graph_nodes(pm)) if op == "Conv"]
        self.assertEqual([a["__multiconv"] for a in attrs], [1, 1])
        self.assertEqual([a["__multiconv_reserved_tiles"] for a in attrs],
                         [20, 20])
        with self.assertRaises(ValueError):
            poptorch.MultiConv().cycleBackOff(2.0)

    def test_cpu_op(self):
        calls = []

        class Model(torch.nn.Module):     # the API reference's example
            def __init__(self):
                super().__init__()
                self.cpu = poptorch.CPU(self.myCpuOp, "MyCPUOp")

            def myCpuOp(self, x):
                calls.append(tuple(x.shape))
                return x * 2.0

            def forward(self, x):
                out = self.cpu(x)
                out = self.cpu(out)
                out = self.cpu(out)
                return out

        x = torch.randn(6, 3)
        opts = poptorch.Options().deviceIterations(2)
        pm = poptorch.inferenceModel(Model(), options=opts)
        out = pm(x)
        self.assertTrue(torch.allclose(out, x * 8.0))
        # 3 calls while tracing, then 3 per micro-batch of 3 rows, 2 of them
        self.assertEqual(calls[3:], [(3, 3)] * 6)

        # an exception in the function stops the run with its text
        state = {"fail": False}

        def flaky(t):
            if state["fail"]:
                raise RuntimeError("no host today")
            return t * 2.0

        pm = poptorch.inferenceModel(
            Fn(lambda m, x: poptorch.CPU(flaky, "Flaky")(x)),
            options=cpu_options())
        self.assertTrue(torch.allclose(pm(x), x * 2.0))
        state["fail"] = True
        with self.assertRaises(poptorch.Error) as cm:
            pm(x)
        self.assertIn("no host today", str(cm.exception))
        self.assertIn("Flaky", str(cm.exception))
        train = poptorch.trainingModel(
            Fn(lambda m, x: poptorch.identity_loss(
                poptorch.CPU(lambda t: t * 2.0, "T")(m.fc(x)), "sum")),
            options=cpu_options())
        with self.assertRaises(poptorch.Error) as cm:
            train(torch.randn(2, 4))
        self.assertIn("inference", str(cm.exception))

    def test_refused_helpers_say_so(self):
        with self.assertRaises(NotImplementedError) as cm:
            poptorch.for_loop(3, lambda x: x, [torch.zeros(1)])
        self.assertIn("not supported yet", str(cm.exception))


if __name__ == "__main__":
    main()
